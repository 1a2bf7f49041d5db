/**
 * `agent webhook replay <event-id>`: runs a stored event again, as a new attempt series with
 * the same payload, through its subscription as it is now; the running gateway picks it up
 * within a second (the output says when none runs).
 *
 * @module
 */
import { UsageError } from "../lib/errors.ts";
import { gatewayRunning } from "../lib/state/gateway_lock.ts";
import type { StoredEvent } from "../lib/state/mod.ts";
import { openStateStore } from "../lib/state/open.ts";
import { describeTarget, readReplayRouting, replayEvent } from "../lib/subscriptions/replay.ts";
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
    // A corrupt file must not block replays: its error is printed, and the event keeps what
    // it had, as the running gateway keeps its last good copy.
    const routing = await readReplayRouting(config);
    if (routing.readError) ctx.stderr(routing.readError.message);
    // The key a replayed direct message takes lasts as the gateway's keys do (the store takes
    // platforms.webhook's idempotency window).
    const store = await openStateStore(config, { sqlite: { backgroundCheckpoints: false } });
    try {
      const { event, keptBecause } = await replayEvent(store, positionals[0], {
        nowMs: ctx.now(),
        routing,
      });
      const running = await gatewayRunning(config.paths.stateDb);
      ctx.stdout(replayReport(event, { keptBecause, running }));
      return 0;
    } finally {
      await store.close();
    }
  },
};

/**
 * What `replay` says: the event queued again, how it is routed (as its subscription does now,
 * or as it was, and why), and when it runs.
 * @param event the event queued again
 * @param options `keptBecause`: why it keeps the prompt and target it had, when it does;
 *   `running`: whether a gateway runs with this home
 */
function replayReport(
  event: StoredEvent,
  options: { keptBecause: string | undefined; running: boolean },
): string {
  const { keptBecause, running } = options;
  const target = describeTarget(event);
  const route = keptBecause === undefined
    ? `as ${event.subscription} renders and routes it now (to ${target}).`
    : `with the prompt and target it had (to ${target}): ${keptBecause}.`;
  const when = running
    ? "The running gateway picks it up within a second"
    : "No gateway is running with this home: the next agent gateway run runs it";
  return `Queued ${event.id} (${event.subscription}, ${event.eventLabel}) again, ${route}\n` +
    `${when}; follow it with: agent webhook events`;
}
