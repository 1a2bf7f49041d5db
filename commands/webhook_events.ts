/**
 * `agent webhook events [<name>]`: recent events from the state database, with their status,
 * attempts, timings and last error (issue: event log and replay).
 *
 * @module
 */
import { UsageError } from "../lib/errors.ts";
import { type EventStatus, openStateStore, type StoredEvent } from "../lib/state/mod.ts";
import type { Command } from "./_command.ts";
import { loadEnabledConfig, parseFlags } from "./_shared.ts";

const STATUSES: readonly EventStatus[] = ["queued", "running", "delivered", "failed"];

const usage = `Usage: agent webhook events [<name>] [--status S] [--limit N] [--json]

Lists recent events, newest first: id, subscription, event type, delivery id, status,
attempts, when it was received, how long it took and the last error.
  --status S   only ${STATUSES.join(", ")}
  --limit N    at most N events (default 20)
  --json       machine-readable output, with each event's attempts`;

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
    const limit = values.limit === undefined ? 20 : Number(values.limit);
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
          attempts_detail: store.attempts(event.id),
        }));
        ctx.stdout(JSON.stringify(rows, null, 2));
      } else if (events.length === 0) {
        ctx.stdout(positionals[0] || status ? "No events match." : "No events yet.");
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
    event: event.eventType,
    delivery_id: event.deliveryId,
    mode: event.mode,
    status: event.status,
    attempts: event.attempts,
    received_at: new Date(event.receivedAtMs).toISOString(),
    updated_at: new Date(event.updatedAtMs).toISOString(),
    next_attempt_at: event.nextAttemptAtMs === null
      ? null
      : new Date(event.nextAttemptAtMs).toISOString(),
    target: event.route.deliver,
    last_error: event.lastError,
  };
}

function table(events: StoredEvent[]): string {
  const header = [
    "ID",
    "SUBSCRIPTION",
    "EVENT",
    "DELIVERY ID",
    "STATUS",
    "TRIES",
    "RECEIVED",
    "TOOK",
    "LAST ERROR",
  ];
  const rows = events.map((e) => [
    e.id,
    e.subscription,
    e.eventType,
    e.deliveryId.length > 24 ? `${e.deliveryId.slice(0, 23)}…` : e.deliveryId,
    e.status,
    String(e.attempts),
    new Date(e.receivedAtMs).toISOString().replace("T", " ").slice(0, 19),
    e.status === "delivered" || e.status === "failed"
      ? duration(e.updatedAtMs - e.receivedAtMs)
      : "-",
    (e.lastError ?? "").replace(/\s+/g, " ").slice(0, 60),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  return [header, ...rows]
    .map((row) => row.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd())
    .join("\n");
}

function duration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60_000)} min`;
}
