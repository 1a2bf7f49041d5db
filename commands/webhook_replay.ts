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
import type { StoredEvent } from "../lib/state/mod.ts";
import { openStateStore } from "../lib/state/sqlite/mod.ts";
import type { Config } from "../lib/config/mod.ts";
import {
  readSubscriptionsOrError,
  type SubscriptionRecords,
  unusableSubscriptions,
} from "../lib/subscriptions/file_store.ts";
import type { Command, CommandContext } from "./_command.ts";
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
    const routing = await currentRouting(config, ctx);
    const store = openStateStore(config.paths.stateDb, {
      backgroundCheckpoints: false,
      // The key a replayed direct message takes lasts as the gateway's keys do.
      idempotencyTtlSeconds: config.webhook.idempotencyTtlSeconds,
    });
    try {
      let routed = false;
      const event = store.replay(positionals[0], ctx.now(), (found: StoredEvent) => {
        const route = findRoute(
          found.subscription,
          routing.subscriptions ?? {},
          config.webhook.routes,
        );
        if (!route || routing.unusable.has(route.name)) return undefined;
        routed = true;
        return dispatchFor(route, JSON.parse(found.payload), {
          event: found.eventLabel,
          subscription: route.name,
          deliveryId: found.deliveryId,
        }, found.payload);
      });
      const running = await gatewayRunning(config.paths.stateDb);
      ctx.stdout(replayReport(event, { routed, routing, running }));
      return 0;
    } finally {
      await store.close();
    }
  },
};

/** The subscriptions a replay is routed by, as the gateway would serve them now. */
interface Routing {
  /** The subscription file's records; undefined when it cannot be read. */
  subscriptions: SubscriptionRecords | undefined;
  /** The records edited into a state the gateway cannot serve, with why, by name. */
  unusable: Map<string, string>;
}

/**
 * Reads the subscriptions a replay is routed by. A corrupt file must not block replays: its
 * error is printed and the events keep what they had, as the running gateway keeps its last
 * good copy. A record edited into one the gateway cannot serve is not used either (see
 * `unusableSubscriptions`): the event keeps its own prompt and target.
 * @param ctx where a corrupt file's error is printed
 */
async function currentRouting(config: Config, ctx: CommandContext): Promise<Routing> {
  const read = await readSubscriptionsOrError(config.paths.subscriptions);
  if (read instanceof ConfigError) ctx.stderr(read.message);
  const subscriptions = read instanceof ConfigError ? undefined : read;
  const unusable = subscriptions
    ? unusableSubscriptions(subscriptions, config.paths.subscriptions, config.webhook.routes)
    : new Map<string, string>();
  return { subscriptions, unusable };
}

/**
 * What `replay` says: the event queued again, how it is routed (as its subscription does now,
 * or as it was, and why), and when it runs.
 * @param event the event queued again
 * @param options `routed`: whether its subscription routed it now; `routing`: the
 *   subscriptions read; `running`: whether a gateway runs with this home
 */
function replayReport(
  event: StoredEvent,
  options: { routed: boolean; routing: Routing; running: boolean },
): string {
  const { routed, routing, running } = options;
  const target = describeTarget(event);
  const route = routed
    ? `as ${event.subscription} renders and routes it now (to ${target}).`
    : `with the prompt and target it had (to ${target}): ${unroutedReason(event, routing)}.`;
  const when = running
    ? "The running gateway picks it up within a second"
    : "No gateway is running with this home: the next agent gateway run runs it";
  return `Queued ${event.id} (${event.subscription}, ${event.eventLabel}) again, ${route}\n` +
    `${when}; follow it with: agent webhook events`;
}

/** Why a replayed event keeps the prompt and target it had. */
function unroutedReason(event: StoredEvent, routing: Routing): string {
  if (!routing.subscriptions) return "the subscription file could not be read";
  return routing.unusable.get(event.subscription) ??
    `subscription ${event.subscription} no longer exists`;
}

/** `telegram chat 42`, `log`, ..., and `directly` for direct delivery. */
function describeTarget(event: StoredEvent): string {
  const chat = event.route.chatId ? ` chat ${event.route.chatId}` : "";
  return `${event.route.deliver}${chat}${event.mode === "direct" ? ", directly" : ""}`;
}
