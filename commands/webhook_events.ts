/**
 * `agent webhook events [<name>]`: recent events from the state database, with their status,
 * attempts, timings and last error (docs/commands.md).
 *
 * @module
 */
import type { Config } from "../lib/config/mod.ts";
import { ConfigError, UsageError } from "../lib/errors.ts";
import { findRoute } from "../lib/subscriptions/routes.ts";
import type { EventStatus } from "../lib/state/mod.ts";
import { openStateStore } from "../lib/state/sqlite/mod.ts";
import { readSubscriptionsOrError } from "../lib/subscriptions/file_store.ts";
import type { Command } from "./_command.ts";
import { eventJson, eventTable } from "./_event_listing.ts";
import { loadEnabledConfig } from "./_enabled_config.ts";
import { parseFlags, wholeNumber } from "./_flags.ts";

const STATUSES: readonly EventStatus[] = ["queued", "running", "delivered", "failed"];

const usage = `Usage: agent webhook events [<name>] [--status S] [--limit N] [--json]

Lists recent events, newest first: id, subscription, event type, delivery id, status,
attempts, when it was received (UTC), how long it took and the last error (the first 80
characters; --json has it whole).
  --status S   only ${STATUSES.join(", ")}
  --limit N    at most N events (default 20)
  --json       machine-readable output, with each event's attempts and their series (a
               replay starts a new one)`;

const options = {
  status: { type: "string" },
  limit: { type: "string" },
  json: { type: "boolean" },
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
    const config = await loadEnabledConfig(ctx);
    if (!config) return 1;
    const store = openStateStore(config.paths.stateDb, { backgroundCheckpoints: false });
    try {
      const events = store.listEvents({ subscription: positionals[0], status, limit });
      if (values.json) {
        const rows = events.map((event) => eventJson(event, store.attempts(event.id)));
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
  const records = await readSubscriptionsOrError(config.paths.subscriptions);
  return records instanceof ConfigError ||
    findRoute(name, records, config.webhook.routes) !== undefined;
}
