/**
 * The statements the store runs often, prepared once when the database opens.
 *
 * @module
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";

const EVENT_COLUMNS = "id, subscription, event_type, delivery_id, dedupe, source, mode, payload, " +
  "prompt, route, received_at, status, attempts, next_attempt_at, response, parts_sent, " +
  "last_error, updated_at, key_expires_at, headers, scheme, session_key, transformed";

/** The row that holds an idempotency key (see `events_key` in `_schema.ts`). */
const KEY_HOLDER = "subscription = ? AND delivery_id = ? AND key_expires_at IS NOT NULL";

/**
 * A queued event that may run now as far as its conversation goes: it has no conversation key,
 * or no other event of its key is running and none accepted before it is still queued (in
 * backoff too), so a conversation's runs go one at a time, in the order its events arrived
 * (docs/subscriptions.md#conversations). Through `events_session`, whose WHERE clause the
 * inner terms repeat.
 */
const SESSION_FREE = "(events.session_key IS NULL OR NOT EXISTS (SELECT 1 FROM events AS earlier " +
  "WHERE earlier.subscription = events.subscription " +
  "AND earlier.session_key = events.session_key AND earlier.session_key IS NOT NULL " +
  "AND earlier.status IN ('queued', 'running') " +
  "AND (earlier.status = 'running' OR earlier.rowid < events.rowid)))";

const CLOSE_ATTEMPT = "UPDATE attempts SET finished_at = ?, step = ?, error = ? " +
  "WHERE rowid = (SELECT max(rowid) FROM attempts WHERE event_id = ?)";

/** The statements the store runs often, prepared once (exported for query-plan tests). */
export const STATEMENTS = {
  keyHolder: `SELECT id, key_expires_at FROM events WHERE ${KEY_HOLDER}`,
  releaseKey: `UPDATE events SET key_expires_at = NULL WHERE ${KEY_HOLDER}`,
  // A row that would take a key already held is not inserted (changes = 0).
  insertEvent: `INSERT INTO events (${EVENT_COLUMNS}) VALUES (${Array(23).fill("?").join(", ")}) ` +
    "ON CONFLICT (subscription, delivery_id) WHERE key_expires_at IS NOT NULL DO NOTHING",
  insertAttempt: "INSERT INTO attempts (event_id, attempt, started_at, finished_at, step, error) " +
    "VALUES (?, ?, ?, ?, ?, ?)",
  due: "SELECT * FROM events WHERE status = 'queued' AND next_attempt_at <= ? " +
    `AND ${SESSION_FREE} ORDER BY next_attempt_at, rowid LIMIT ?`,
  claim: "UPDATE events SET status = 'running', attempts = attempts + 1, " +
    "next_attempt_at = NULL, updated_at = ? WHERE id = ?",
  saveResponse: "UPDATE events SET response = ?, updated_at = ? WHERE id = ?",
  saveTransformed: "UPDATE events SET transformed = ?, prompt = ?, updated_at = ? WHERE id = ?",
  // The run that answered, and its answer, stay on the attempt for the event's lineage.
  agentDone: "UPDATE attempts SET step = 'delivery', provider = ?, model = ?, " +
    "prompt_tokens = ?, completion_tokens = ?, run_ms = ?, answer = ? " +
    "WHERE rowid = (SELECT max(rowid) FROM attempts WHERE event_id = ?)",
  insertPart: "INSERT INTO parts (event_id, part, parts, target, chat, message_id, url, " +
    "sent_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
  parts: "SELECT * FROM parts WHERE event_id = ? ORDER BY rowid",
  // The first save of an attempt beyond the parts out when it began (?3), with parts still to
  // go (?4 in all), also marks the attempt as one that does not count: it moved the delivery
  // on, crash or not.
  savePartsSent: "UPDATE events SET uncounted_attempts = uncounted_attempts + " +
    "(parts_sent = ?3 AND ?1 > ?3 AND ?1 < ?4), parts_sent = ?1, updated_at = ?2 WHERE id = ?5",
  // The count alone, outside an attempt (a direct message's progress, a replay's resume point).
  setPartsSent: "UPDATE events SET parts_sent = ?, updated_at = ? WHERE id = ?",
  setStatus: "UPDATE events SET status = ?, next_attempt_at = ?, last_error = ?, updated_at = ? " +
    "WHERE id = ?",
  // The errors of earlier attempts stay in the attempts table; the event itself no longer has one.
  delivered: "UPDATE events SET status = 'delivered', next_attempt_at = NULL, last_error = NULL, " +
    "updated_at = ? WHERE id = ? RETURNING subscription, delivery_id, dedupe, key_expires_at",
  setKey: "UPDATE events SET key_expires_at = ? WHERE id = ?",
  // The outcome of a direct message whose progress was recorded (?7 is that record's error).
  finishDirect:
    "UPDATE events SET status = ?1, parts_sent = ?2, last_error = ?3, updated_at = ?4, " +
    "key_expires_at = ?5 WHERE id = ?6 AND mode = 'direct' AND status = 'failed' " +
    "AND last_error = ?7",
  // Only a message never delivered: a delivered one whose replay failed keeps its key.
  releaseFailedDirectKey: "UPDATE events SET key_expires_at = NULL " +
    "WHERE id = ?1 AND mode = 'direct' AND status = 'failed' AND key_expires_at IS NOT NULL " +
    "AND NOT EXISTS (SELECT 1 FROM attempts WHERE event_id = ?1 AND finished_at IS NOT NULL " +
    "AND error IS NULL)",
  everDelivered: "SELECT 1 AS delivered FROM attempts WHERE event_id = ? " +
    "AND finished_at IS NOT NULL AND error IS NULL LIMIT 1",
  closeAttempt: CLOSE_ATTEMPT,
  // An event waiting for an earlier one of its conversation is not due: the end of that one's
  // run wakes the worker. The walk of events_due ends at the first event that may run.
  // Events folded into a coalesced run are queued with no due time (`_store_coalesce.ts`).
  nextDue: "SELECT next_attempt_at AS due FROM events WHERE status = 'queued' " +
    "AND next_attempt_at IS NOT NULL " +
    `AND ${SESSION_FREE} ORDER BY next_attempt_at LIMIT 1`,
  // Through events_due, which holds only the queued events: a scrape reads none of the others.
  queueStats: "SELECT count(*) AS queued, min(coalesce(replayed_at, received_at)) AS oldest " +
    "FROM events WHERE status = 'queued'",
  // Read by the dashboard's overview only: a scan of the recent events is fine there.
  acceptedPerMinute: "SELECT (received_at / 60000) * 60000 AS minute, count(*) AS n " +
    "FROM events WHERE received_at >= ? GROUP BY minute",
  endedPerMinute: "SELECT (updated_at / 60000) * 60000 AS minute, status, count(*) AS n " +
    "FROM events WHERE status IN ('delivered', 'failed') AND updated_at >= ? " +
    "GROUP BY minute, status",
  // The same by subscription, for the dashboard's subscriptions page only.
  acceptedBySubscription: "SELECT subscription, count(*) AS n FROM events " +
    "WHERE received_at >= ? GROUP BY subscription",
  endedBySubscription: "SELECT subscription, status, count(*) AS n FROM events " +
    "WHERE status IN ('delivered', 'failed') AND updated_at >= ? GROUP BY subscription, status",
  // The same, among the events whose next step is a delivery, through their own index.
  dueForDelivery: "SELECT * FROM events INDEXED BY events_due_delivery WHERE status = 'queued' " +
    "AND (mode = 'direct' OR response IS NOT NULL) AND next_attempt_at <= ? " +
    `AND ${SESSION_FREE} ORDER BY next_attempt_at, rowid LIMIT ?`,
  byId: "SELECT * FROM events WHERE id = ?",
  byPrefix: "SELECT * FROM events WHERE id >= ? AND id < ? ORDER BY id LIMIT 3",
  attempts: "SELECT * FROM attempts WHERE event_id = ? ORDER BY rowid",
  // Uses events_direct_parts, whose WHERE clause these terms repeat; named, since without
  // statistics the planner would take events_failed and read every dead letter.
  partsSentByFailedAttempts: "SELECT max(parts_sent) AS parts FROM events " +
    "INDEXED BY events_direct_parts WHERE subscription = ? " +
    "AND delivery_id = ? AND mode = 'direct' AND status = 'failed' AND parts_sent > 0 " +
    "AND prompt = ? AND route = ? AND received_at > ?",
} as const;

/** Prepared statements by name. */
export type Statements = Record<keyof typeof STATEMENTS, StatementSync>;

/**
 * Prepares every statement of {@link STATEMENTS} on a connection.
 * @param db the open connection, its tables created
 * @returns the statements by name
 */
export function prepareStatements(db: DatabaseSync): Statements {
  return Object.fromEntries(
    Object.entries(STATEMENTS).map(([name, sql]) => [name, db.prepare(sql)]),
  ) as Statements;
}
