/**
 * `agent webhook replay <event-id>`: runs a stored event again, as a new attempt series with
 * the same payload; the running gateway picks it up within a second.
 *
 * @module
 */
import { UsageError } from "../lib/errors.ts";
import { openStateStore } from "../lib/state/mod.ts";
import type { Command } from "./_command.ts";
import { loadEnabledConfig, parseFlags } from "./_shared.ts";

const usage = `Usage: agent webhook replay <event-id>

Queues the event again (a new series of attempts, same payload and prompt). The id comes from
agent webhook events; a unique prefix is enough.`;

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
    const store = openStateStore(config.paths.stateDb, { backgroundCheckpoints: false });
    try {
      const event = store.replay(positionals[0], ctx.now());
      ctx.stdout(
        `Queued ${event.id} (${event.subscription}, ${event.eventType}) again.\n` +
          "The running gateway picks it up within a second; follow it with: agent webhook events",
      );
      return 0;
    } finally {
      await store.close();
    }
  },
};
