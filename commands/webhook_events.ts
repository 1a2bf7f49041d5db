/**
 * `agent webhook events [<name>]`: recent events from the state database, with their status,
 * attempts, timings and last error; with `--follow`, new events and their outcomes as the
 * running gateway stores them, until Ctrl-C (docs/commands.md).
 *
 * @module
 */
import type { Config } from "../lib/config/mod.ts";
import { ConfigError, UsageError } from "../lib/errors.ts";
import { findRoute } from "../lib/subscriptions/routes.ts";
import type { EventStatus } from "../lib/state/mod.ts";
import { openStateStore } from "../lib/state/open.ts";
import { readSubscriptionsOrErrorOf } from "../lib/subscriptions/source.ts";
import type { Command } from "./_command.ts";
import { eventJson, eventTable } from "./_event_listing.ts";
import { followEvents } from "./_follow.ts";
import { loadEnabledConfig } from "./_enabled_config.ts";
import { parseFlags, wholeNumber } from "./_flags.ts";

const STATUSES: readonly EventStatus[] = ["queued", "running", "delivered", "failed"];

const usage = `Usage: agent webhook events [<name>] [--status S] [--limit N] [--json | --follow]

Lists recent events, newest first: id, subscription, event type, delivery id, status,
attempts, when it was received (UTC), how long it took and the last error (the first 80
characters; --json has it whole). agent webhook show <id> prints one event's whole story.
  --status S   only ${STATUSES.join(", ")}
  --limit N    at most N events (default 20)
  --json       machine-readable output, with each event's attempts and their series (a
               replay starts a new one), and each agent run's model and tokens
  --follow     print the latest events, oldest first, then a line for each new event and each
               change of status (running, retry, delivered, failed) as it happens, until Ctrl-C`;

const options = {
  status: { type: "string" },
  limit: { type: "string" },
  json: { type: "boolean" },
  follow: { type: "boolean" },
} as const;

/** `agent webhook events`. */
export const webhookEvents: Command = {
  path: ["webhook", "events"],
  summary: "List recent events with status, attempts and last error",
  usage,
  async run(argv, ctx) {
    const { values, positionals } = parseFlags(argv, options, usage);
    if (positionals.length > 1) throw new UsageError(`Expected at most one <name>.\n\n${usage}`);
    const status = values.status as EventStatus | undefined;
    if (status !== undefined && !STATUSES.includes(status)) {
      throw new UsageError(`--status must be one of: ${STATUSES.join(", ")}`);
    }
    const limit = values.limit === undefined ? 20 : wholeNumber(values.limit);
    if (!Number.isSafeInteger(limit) || limit < 1) {
      throw new UsageError("--limit must be a whole number ≥ 1");
    }
    if (values.follow && values.json) throw new UsageError("--follow prints lines, not --json");
    const config = await loadEnabledConfig(ctx);
    if (!config) return 1;
    const store = await openStateStore(config, { sqlite: { backgroundCheckpoints: false } });
    try {
      if (values.follow) {
        // Ctrl-C ends the following, and the store is closed as after any listing.
        const signal = ctx.shutdownSignal;
        ctx.stderr("Following new events; Ctrl-C stops.");
        const following = { subscription: positionals[0], status, limit, signal };
        await followEvents(store, { ...following, print: ctx.stdout, sleep: abortableSleep });
        return 0;
      }
      const events = await store.listEvents({ subscription: positionals[0], status, limit });
      if (values.json) {
        const rows = [];
        for (const event of events) rows.push(eventJson(event, await store.attempts(event.id)));
        ctx.stdout(JSON.stringify(rows, null, 2));
      } else if (events.length === 0) {
        ctx.stdout(await noEventsMessage(config, { name: positionals[0], status }));
      } else {
        ctx.stdout(eventTable(events));
      }
      return 0;
    } finally {
      await store.close();
    }
  },
};

/**
 * What to say when no event matches: none yet, none matching, or that the name asked for is
 * no subscription now (a typo, or one removed).
 * @param options the `name` and `--status` asked for, if any
 */
async function noEventsMessage(
  config: Config,
  options: { name: string | undefined; status: EventStatus | undefined },
): Promise<string> {
  const { name, status } = options;
  if (!name && !status) return "No events yet.";
  if (name !== undefined && !(await isRouteName(config, name))) {
    return `No events match. No subscription is called "${name}" now: ` +
      "agent webhook list shows them.";
  }
  return "No events match.";
}

/**
 * True when `name` is a static route or a subscription now; also true when the subscription
 * file cannot be read, so a corrupt file never makes a real name look unknown.
 */
async function isRouteName(config: Config, name: string): Promise<boolean> {
  const records = await readSubscriptionsOrErrorOf(config);
  return records instanceof ConfigError ||
    findRoute(name, records, config.webhook.routes) !== undefined;
}

/** Waits `ms`, or until `signal` aborts. */
function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
