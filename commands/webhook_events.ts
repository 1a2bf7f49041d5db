/**
 * `agent webhook events [<name>]`: recent events from the state database, with their status,
 * attempts, timings and last error (issue: event log and replay).
 *
 * @module
 */
import type { Config } from "../lib/config/mod.ts";
import { ConfigError, UsageError } from "../lib/errors.ts";
import { oneTerminalLine } from "../lib/log.ts";
import { findRoute } from "../lib/subscriptions/routes.ts";
import {
  type Attempt,
  type EventStatus,
  openStateStore,
  type StoredEvent,
} from "../lib/state/mod.ts";
import { readSubscriptionsOrError } from "../lib/subscriptions/file_store.ts";
import type { Command } from "./_command.ts";
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

/** Longest last error the table shows, in characters. */
const ERROR_COLUMN_CHARS = 80;

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
        const rows = events.map((event) => ({
          ...publicFields(event),
          attempts_detail: withSeries(store.attempts(event.id)).map(publicAttempt),
        }));
        ctx.stdout(JSON.stringify(rows, null, 2));
      } else if (events.length === 0) {
        const name = positionals[0];
        const unknown = name !== undefined && !(await isRouteName(config, name));
        ctx.stdout(
          !name && !status
            ? "No events yet."
            : unknown
            ? `No events match. No subscription is called "${name}" now: ` +
              "agent webhook list shows them."
            : "No events match.",
        );
      } else {
        ctx.stdout(table(events));
      }
      return 0;
    } finally {
      await store.close();
    }
  },
};

/** The fields shown to users: everything but the payload and the prompt. */
function publicFields(event: StoredEvent) {
  return {
    id: event.id,
    subscription: event.subscription,
    event: event.eventLabel,
    source: event.source,
    delivery_id: event.deliveryId,
    mode: event.mode,
    status: event.status,
    attempts: event.attempts,
    uncounted_attempts: event.uncountedAttempts,
    received_at: new Date(event.receivedAtMs).toISOString(),
    replayed_at: isoOrNull(event.replayedAtMs),
    updated_at: new Date(event.updatedAtMs).toISOString(),
    next_attempt_at: isoOrNull(event.nextAttemptAtMs),
    target: event.route.deliver,
    last_error: event.lastError,
  };
}

/**
 * Numbers each attempt's series, from 1: a replay starts a new one, where attempt numbers begin
 * again at 1.
 * @param attempts an event's attempts, oldest first
 */
function withSeries(attempts: Attempt[]): (Attempt & { series: number })[] {
  let series = 0;
  return attempts.map((attempt, i) => {
    if (i === 0 || attempt.attempt <= attempts[i - 1].attempt) series += 1;
    return { ...attempt, series };
  });
}

/** An attempt as the JSON shows it: snake_case names and ISO times, as the event's own. */
function publicAttempt(attempt: Attempt & { series: number }) {
  return {
    series: attempt.series,
    attempt: attempt.attempt,
    step: attempt.step,
    started_at: new Date(attempt.startedAtMs).toISOString(),
    finished_at: isoOrNull(attempt.finishedAtMs),
    error: attempt.error,
  };
}

/** An ISO time, or null for none (or for a time past the year 275760, which has no ISO form). */
function isoOrNull(ms: number | null): string | null {
  return ms === null || Math.abs(ms) > 8.64e15 ? null : new Date(ms).toISOString();
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

/**
 * The human listing, one line per event. TOOK is from when it was received, or for a replayed
 * event from its replay (not the days before, when it first came in), to its outcome.
 */
function table(events: StoredEvent[]): string {
  const header = [
    "ID",
    "SUBSCRIPTION",
    "EVENT",
    "DELIVERY ID",
    "STATUS",
    "TRIES",
    "RECEIVED (UTC)",
    "TOOK",
    "LAST ERROR",
  ];
  // Delivery ids, event types and errors come from senders, platforms and agents: escape
  // what a terminal would run (see oneTerminalLine). `--json` is safe as it is.
  const rows = events.map((e) => [
    e.id,
    e.subscription,
    oneTerminalLine(e.eventLabel),
    cut(oneTerminalLine(e.deliveryId), 24),
    e.status,
    String(e.attempts),
    new Date(e.receivedAtMs).toISOString().replace("T", " ").slice(0, 19),
    e.status === "delivered" || e.status === "failed"
      ? duration(e.updatedAtMs - (e.replayedAtMs ?? e.receivedAtMs))
      : "-",
    cut(oneTerminalLine(e.lastError ?? "").replace(/\s+/g, " "), ERROR_COLUMN_CHARS),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  return [header, ...rows]
    .map((row) => row.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd())
    .join("\n");
}

/** `text`, or its first `maxChars - 1` characters and "…" when it is longer. */
function cut(text: string, maxChars: number): string {
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}

function duration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60_000)} min`;
}
