/**
 * The store's less frequent operations: listing, replay, recovery after a crash, pruning.
 * They prepare their statements on each call: they run once per command or per start.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { ConflictError } from "../../errors.ts";
import { rowToEvent } from "../_rows.ts";
import type { EventDispatch, EventFilter, StoredEvent } from "../mod.ts";

type Row = Record<string, unknown>;
type Transaction = (run: () => void) => void;

const INTERRUPTED = "interrupted: the gateway stopped during this attempt";

/**
 * Lists events, newest accepted first (rowid order, which needs no index).
 * @param db the database
 * @param filter which events (see {@link EventFilter}); `limit` @default {20}
 * @returns the events
 */
export function listEvents(db: DatabaseSync, filter: EventFilter): StoredEvent[] {
  const { sql, params } = listingQuery(filter);
  return (db.prepare(sql).all(...params) as Row[]).map(rowToEvent);
}

/**
 * The query {@link listEvents} runs (exported for query-plan tests).
 * @param filter as {@link listEvents} takes it
 * @returns the SQL and its parameters
 */
export function listingQuery(filter: EventFilter): { sql: string; params: (string | number)[] } {
  const where: string[] = [];
  const params: (string | number)[] = [];
  if (filter.subscription !== undefined) {
    where.push("subscription = ?");
    params.push(filter.subscription);
  }
  if (filter.status === "queued") {
    // As a literal, which shows the planner that the index of queued events holds them all.
    where.push("status = 'queued'");
  } else if (filter.status !== undefined) {
    where.push("status = ?");
    params.push(filter.status);
  }
  if (filter.eventType !== undefined) {
    where.push("(event_type = ? OR substr(event_type, 1, ?) = ?)");
    params.push(filter.eventType, filter.eventType.length + 1, `${filter.eventType}.`);
  }
  if (filter.deliveryId !== undefined) {
    where.push("delivery_id = ?");
    params.push(filter.deliveryId);
  }
  if (filter.beforeId !== undefined) {
    // The cursor's own row, or, once pruned, the first event after it in id order: found
    // through the index of ids, then a range of rowids.
    where.push(
      "rowid < coalesce((SELECT rowid FROM events WHERE id >= ? ORDER BY id LIMIT 1), " +
        "(SELECT max(rowid) + 1 FROM events))",
    );
    params.push(filter.beforeId);
  }
  const clause = where.length ? `WHERE ${where.join(" AND ")}` : "";
  params.push(Math.max(0, Math.floor(filter.limit ?? 20)));
  if (filter.status !== "queued") {
    return { sql: `SELECT * FROM events ${clause} ORDER BY rowid DESC LIMIT ?`, params };
  }
  // The queued events through their own index, sorting only their rowids: the planner, to keep
  // rowid order without a sort, would read every event, and sorting whole queued rows is slow
  // for a large backlog.
  const newest = `SELECT rowid FROM events INDEXED BY events_due ${clause} ` +
    "ORDER BY rowid DESC LIMIT ?";
  return { sql: `SELECT * FROM events WHERE rowid IN (${newest}) ORDER BY rowid DESC`, params };
}

/**
 * Requeues an event for a new attempt series.
 * @param db the database
 * @param event the event to replay
 * @param nowMs current time: the event is due then
 * @param dispatch the mode, prompt and route to run it with; its own when omitted
 * @returns the event as stored afterwards
 * @throws ConflictError when the event is running (or was when the gateway last stopped)
 */
export function replayEvent(
  db: DatabaseSync,
  event: StoredEvent,
  nowMs: number,
  dispatch: EventDispatch = event,
): StoredEvent {
  // One statement checks and requeues, so a gateway claiming the event meanwhile wins cleanly.
  // A direct message not yet delivered whole keeps its parts sent when it is sent the same way
  // again: the replay sends the rest, not the first parts twice.
  const route = JSON.stringify(dispatch.route);
  const { changes } = db.prepare(
    "UPDATE events SET status = 'queued', attempts = 0, next_attempt_at = ?1, response = NULL, " +
      "parts_sent = CASE WHEN status != 'delivered' AND mode = 'direct' AND ?2 = 'direct' " +
      "AND prompt = ?3 AND route = ?4 THEN parts_sent ELSE 0 END, " +
      "last_error = NULL, uncounted_attempts = 0, updated_at = ?1, replayed_at = ?1, mode = ?2, " +
      // A replay runs the event's transform again (docs/subscriptions.md#transforms).
      "transformed = NULL, " +
      "prompt = ?3, route = ?4 " +
      "WHERE id = ?5 AND status != 'running'",
  ).run(nowMs, dispatch.mode, dispatch.prompt, route, event.id);
  if (Number(changes) === 0) {
    throw new ConflictError(
      `Cannot replay ${event.id}: it is running, or was when the gateway last stopped (the next ` +
        "start resumes it); wait until it ends",
    );
  }
  return rowToEvent(db.prepare("SELECT * FROM events WHERE id = ?").get(event.id) as Row);
}

/**
 * Requeues events left `running` by a crash or a stop, due now, and closes their open attempts
 * with an "interrupted" error. At start (no `eventId`), an interrupted attempt still counts,
 * so an event that crashes the gateway every time ends as `failed` instead of looping; one
 * that delivered part of its message first was already marked as not counting when the part
 * was saved. An event the worker's own graceful stop ended (`eventId`) does not count: the
 * stop was the operator's, not the event's.
 * @param db the database
 * @param transaction the transaction runner
 * @param nowMs current time
 * @param eventId only this event, if it is running (a graceful stop); every running event
 *   when omitted
 * @returns how many events were requeued
 */
export function recoverInterrupted(
  db: DatabaseSync,
  transaction: Transaction,
  nowMs: number,
  eventId?: string,
): number {
  const which = eventId === undefined ? "status = 'running'" : "status = 'running' AND id = ?";
  const only = eventId === undefined ? [] : [eventId];
  const uncount = eventId === undefined ? "" : "uncounted_attempts = uncounted_attempts + 1, ";
  let count = 0;
  transaction(() => {
    db.prepare(
      "UPDATE attempts SET finished_at = ?, error = ? WHERE finished_at IS NULL " +
        `AND event_id IN (SELECT id FROM events WHERE ${which})`,
    ).run(nowMs, INTERRUPTED, ...only);
    count = Number(
      db.prepare(
        `UPDATE events SET status = 'queued', next_attempt_at = ?, ${uncount}updated_at = ? ` +
          `WHERE ${which}`,
      ).run(nowMs, nowMs, ...only).changes,
    );
  });
  return count;
}

/**
 * Deletes delivered and failed events received (and, if replayed, replayed) before the
 * retention window, with their attempts and the receipts of their parts. Queued and running events are kept: they are work. An
 * event's idempotency key goes with it (an expired key just stays on its row until then, or
 * until a newer event with the same delivery id takes it over).
 * @param db the database
 * @param transaction the transaction runner
 * @param nowMs current time
 * @param retentionDays how many days of finished events to keep
 * @returns how many events were deleted
 */
export function prune(
  db: DatabaseSync,
  transaction: Transaction,
  nowMs: number,
  options: { retentionDays: number; maxRows: number },
): { events: number } {
  const cutoff = nowMs - options.retentionDays * 86_400_000;
  // Oldest first, through the index of finished events (queued and running ones are not in it),
  // at most maxRows at a time: the caller repeats while a batch comes back full, yielding to
  // requests in between. A replay starts the window again: a dead letter replayed after the
  // window is kept as long as a new event would be.
  const old = "SELECT id FROM events INDEXED BY events_finished WHERE received_at < ?1 " +
    "AND status IN ('delivered', 'failed') AND (replayed_at IS NULL OR replayed_at < ?1) " +
    "ORDER BY received_at LIMIT ?2";
  let events = 0;
  transaction(() => {
    db.prepare(`DELETE FROM attempts WHERE event_id IN (${old})`).run(cutoff, options.maxRows);
    db.prepare(`DELETE FROM parts WHERE event_id IN (${old})`).run(cutoff, options.maxRows);
    events = Number(
      db.prepare(`DELETE FROM events WHERE id IN (${old})`).run(cutoff, options.maxRows).changes,
    );
  });
  return { events };
}
