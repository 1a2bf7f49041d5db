/**
 * `agent webhook replay <event-id>`: runs a stored event again, as a new attempt series with
 * the same payload, through its subscription as it is now; the running gateway picks it up
 * within a second (the output says when none runs).
 *
 * @module
 */
import { ConfigError, UsageError } from "../lib/errors.ts";
import { gatewayRunning } from "../lib/state/gateway_lock.ts";
import { dispatchFor, findRoute } from "../lib/subscriptions/routes.ts";
import { openStateStore, type StoredEvent } from "../lib/state/mod.ts";
import {
  readSubscriptionsOrError,
  unusableSubscriptions,
} from "../lib/subscriptions/file_store.ts";
import type { Command } from "./_command.ts";
import { loadEnabledConfig } from "./_enabled_config.ts";
import { parseFlags } from "./_flags.ts";

const usage = `Usage: agent webhook replay <event-id>

Queues the event again: a new series of attempts with the same payload, rendered and routed by
its subscription as it is now (prompt, target, chat id, skills, direct delivery), so a fix to the
subscription applies. An event whose subscription was removed, or while the subscription file
cannot be read, keeps the prompt and target it had. The id comes from agent webhook events; a
unique prefix is enough.`;

/** `agent webhook replay`. */
export const webhookReplay: Command = {
  path: ["webhook", "replay"],
  summary: "Run a stored event again",
  usage,
  async run(argv, ctx) {
    const { positionals } = parseFlags(argv, {}, usage);
    if (positionals.length !== 1) throw new UsageError(`Expected one <event-id>.\n\n${usage}`);
    const config = await loadEnabledConfig(ctx);
    if (!config) return 1;
    // A corrupt file must not block replays: the events keep what they had, as the running
    // gateway keeps its last good copy.
    const read = await readSubscriptionsOrError(config.paths.subscriptions);
    if (read instanceof ConfigError) ctx.stderr(read.message);
    const subscriptions = read instanceof ConfigError ? undefined : read;
    // A record edited into one the gateway cannot serve is not used either (see
    // unusableSubscriptions): the event keeps its own prompt and target.
    const unusable = subscriptions
      ? unusableSubscriptions(subscriptions, config.paths.subscriptions, config.webhook.routes)
      : new Map<string, string>();
    const store = openStateStore(config.paths.stateDb, {
      backgroundCheckpoints: false,
      // The key a replayed direct message takes lasts as the gateway's keys do.
      idempotencyTtlSeconds: config.webhook.idempotencyTtlSeconds,
    });
    try {
      let routed = false;
      const event = store.replay(positionals[0], ctx.now(), (found: StoredEvent) => {
        const route = findRoute(found.subscription, subscriptions ?? {}, config.webhook.routes);
        if (!route || unusable.has(route.name)) return undefined;
        routed = true;
        return dispatchFor(route, JSON.parse(found.payload), {
          event: found.eventLabel,
          subscription: route.name,
          deliveryId: found.deliveryId,
        }, found.payload);
      });
      ctx.stdout(
        `Queued ${event.id} (${event.subscription}, ${event.eventLabel}) again, ` +
          (routed
            ? `as ${event.subscription} renders and routes it now ` +
              `(to ${describeTarget(event)}).\n`
            : `with the prompt and target it had (to ${describeTarget(event)}): ` +
              (!subscriptions
                ? "the subscription file could not be read.\n"
                : unusable.has(event.subscription)
                ? `${unusable.get(event.subscription)}.\n`
                : `subscription ${event.subscription} no longer exists.\n`)) +
          (await gatewayRunning(config.paths.stateDb)
            ? "The running gateway picks it up within a second"
            : "No gateway is running with this home: the next agent gateway run runs it") +
          "; follow it with: agent webhook events",
      );
      return 0;
    } finally {
      await store.close();
    }
  },
};

/** `telegram chat 42`, `log`, ..., and `directly` for direct delivery. */
function describeTarget(event: StoredEvent): string {
  const chat = event.route.chatId ? ` chat ${event.route.chatId}` : "";
  return `${event.route.deliver}${chat}${event.mode === "direct" ? ", directly" : ""}`;
}
