/**
 * Tables of the state database and their upgrades from older versions; rows become records in
 * `../_rows.ts`.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";

/** Bumped when the tables change; stored in `PRAGMA user_version`. */
export const SCHEMA_VERSION = 11;

/**
 * The tables. Events live in a rowid table, so rowid order is acceptance order and "newest
 * first" needs no index. Every index is paid for on the ingest path, so there are few, and most
 * are partial, holding only the rows a query looks for:
 *
 * - `events_key`: the idempotency key is the event row itself. `key_expires_at` is set on the
 *   row that holds the key of its (subscription, delivery_id), and this unique index over those
 *   rows makes the duplicate check part of the insert, with no second b-tree to write.
 * - `events_due`, `events_running`: the queued and the running events.
 * - `events_due_delivery`: the queued events whose next step is a delivery (a direct message,
 *   or an agent's answer already saved), which the worker still starts while the agent fails
 *   every run. An agent-mode event waiting for its run is not in it, so ingest does not write it.
 * - `events_direct_parts`: failed direct deliveries that got some parts out, so the sender's
 *   retry resumes after them; an agent-mode insert only evaluates its WHERE clause.
 * - `events_failed`, `events_failed_subscription`: the dead letters, of all and by subscription,
 *   so `webhook events --status failed` does not read every event to find a few.
 * - `events_finished`: delivered and failed events by when they came in, the ones retention
 *   deletes. Ingest writes no entry to it, and a prune does not walk past queued events older
 *   than the retention window on every batch.
 *
 * `uncounted_attempts` counts the attempts of the current series that delivered part of a
 * message before failing, which do not count toward the retry limit; `replayed_at` is when a
 * replay queued the current series (null for the first), so `webhook events` can tell how long
 * the replay took.
 *
 * What an event's lineage shows (docs/durability.md#what-is-kept): `headers` (JSON, redacted
 * before they get here) and `scheme` on the event row, written by the insert that accepts it;
 * the agent run that answered, and its answer, on its attempt row, written by the update that
 * saves the answer; and a `parts` row for each message part delivered, with the platform's
 * message id, indexed by event for the lineage (a worker write, never one of ingest).
 *
 * Conversations (docs/subscriptions.md#conversations): `session_key` is the event's rendered
 * conversation key, null for most events; `events_session` holds only the queued and running
 * events that have one, so the claim can tell, without a scan, whether an earlier event of the
 * same key still waits or runs. `session_turns` holds each run's prompt and answer, written with
 * the answer, in rowid order, which is the order the conversation's runs answered.
 *
 * Coalescing (docs/subscriptions.md#coalescing): `coalesce_key` is the rendered key of an event
 * whose subscription folds bursts, and `coalesced_into` the event whose agent run answered it
 * (the first of its window). `events_coalesce` holds the queued events of a key, the window a
 * new one slides; `events_coalesced_into` the events folded into a run.
 */
export const SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS events (
  id TEXT NOT NULL UNIQUE,
  subscription TEXT NOT NULL,
  event_type TEXT NOT NULL,
  delivery_id TEXT NOT NULL,
  dedupe INTEGER NOT NULL,
  source TEXT NOT NULL,
  mode TEXT NOT NULL,
  payload TEXT NOT NULL,
  prompt TEXT NOT NULL,
  route TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  response TEXT,
  parts_sent INTEGER NOT NULL DEFAULT 0,
  uncounted_attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  updated_at INTEGER NOT NULL,
  key_expires_at INTEGER,
  replayed_at INTEGER,
  headers TEXT,
  scheme TEXT,
  session_key TEXT,
  coalesce_key TEXT,
  coalesced_into TEXT,
  transformed TEXT
);
CREATE INDEX IF NOT EXISTS events_due ON events(next_attempt_at) WHERE status = 'queued';
CREATE INDEX IF NOT EXISTS events_running ON events(status) WHERE status = 'running';
CREATE INDEX IF NOT EXISTS events_subscription ON events(subscription);
CREATE TABLE IF NOT EXISTS attempts (
  event_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  step TEXT NOT NULL,
  error TEXT,
  provider TEXT,
  model TEXT,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  run_ms INTEGER,
  answer TEXT
);
CREATE INDEX IF NOT EXISTS attempts_event ON attempts(event_id);
CREATE TABLE IF NOT EXISTS parts (
  event_id TEXT NOT NULL,
  part INTEGER NOT NULL,
  parts INTEGER NOT NULL,
  target TEXT NOT NULL,
  chat TEXT NOT NULL,
  message_id TEXT,
  url TEXT,
  sent_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS parts_event ON parts(event_id);
CREATE INDEX IF NOT EXISTS events_finished ON events(received_at)
  WHERE status IN ('delivered', 'failed');
CREATE UNIQUE INDEX IF NOT EXISTS events_key ON events(subscription, delivery_id)
  WHERE key_expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_direct_parts ON events(subscription, delivery_id)
  WHERE mode = 'direct' AND status = 'failed' AND parts_sent > 0;
CREATE INDEX IF NOT EXISTS events_failed ON events(status) WHERE status = 'failed';
CREATE INDEX IF NOT EXISTS events_failed_subscription ON events(subscription)
  WHERE status = 'failed';
CREATE INDEX IF NOT EXISTS events_due_delivery ON events(next_attempt_at)
  WHERE status = 'queued' AND (mode = 'direct' OR response IS NOT NULL);
CREATE INDEX IF NOT EXISTS events_coalesce ON events(subscription, coalesce_key)
  WHERE status = 'queued' AND coalesce_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_coalesced_into ON events(coalesced_into)
  WHERE coalesced_into IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_session ON events(subscription, session_key)
  WHERE session_key IS NOT NULL AND status IN ('queued', 'running');
CREATE TABLE IF NOT EXISTS session_turns (
  subscription TEXT NOT NULL,
  session_key TEXT NOT NULL,
  event_id TEXT NOT NULL,
  prompt TEXT NOT NULL,
  answer TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS session_turns_key ON session_turns(subscription, session_key);
CREATE INDEX IF NOT EXISTS session_turns_created ON session_turns(created_at);
`;

/**
 * Upgrades a version 1 or 2 database to version 3, inside the caller's transaction: each
 * idempotency key moves onto the event it points to, then the keys table goes. A key whose
 * event was already pruned is dropped with it. The join goes through the keys' primary key
 * (subscription, delivery_id), so it is linear in the number of events (matching on `event_id`
 * alone scans the keys table once per event).
 */
const UPGRADE_TO_3_SQL = `
ALTER TABLE events ADD COLUMN key_expires_at INTEGER;
UPDATE events SET key_expires_at = k.expires_at FROM idempotency_keys k
  WHERE k.subscription = events.subscription AND k.delivery_id = events.delivery_id
    AND k.event_id = events.id;
DROP TABLE idempotency_keys;
`;

/**
 * Upgrades a version 1 to 4 database to version 5, after the other upgrades: the column of
 * attempts that do not count. An older gateway already running keeps working with it, since
 * it has a default; an older one starting refuses the newer schema.
 */
const UPGRADE_TO_5_SQL =
  "ALTER TABLE events ADD COLUMN uncounted_attempts INTEGER NOT NULL DEFAULT 0";

/**
 * Upgrades a version 1 to 7 database to version 8, after the other upgrades: when a replay
 * queued the current series (null: none did, or before this version).
 */
const UPGRADE_TO_8_SQL = "ALTER TABLE events ADD COLUMN replayed_at INTEGER";

/**
 * Upgrades a version 1 to 8 database to version 9, before `SCHEMA_SQL` creates
 * `events_finished`: the index of every event by when it came in goes.
 */
const UPGRADE_TO_9_SQL = "DROP INDEX IF EXISTS events_received";

/**
 * Upgrades a version 1 to 9 database to version 10, after the other upgrades: the request's
 * headers and scheme on the event (null for the events already stored), and the agent run and
 * its answer on the attempt. `SCHEMA_SQL` then creates the `parts` table. Columns with no
 * default, so an older gateway still running writes on as before.
 */
const UPGRADE_TO_10_EVENTS_SQL = `
ALTER TABLE events ADD COLUMN headers TEXT;
ALTER TABLE events ADD COLUMN scheme TEXT;
`;
const UPGRADE_TO_10_ATTEMPTS_SQL = `
ALTER TABLE attempts ADD COLUMN provider TEXT;
ALTER TABLE attempts ADD COLUMN model TEXT;
ALTER TABLE attempts ADD COLUMN prompt_tokens INTEGER;
ALTER TABLE attempts ADD COLUMN completion_tokens INTEGER;
ALTER TABLE attempts ADD COLUMN run_ms INTEGER;
ALTER TABLE attempts ADD COLUMN answer TEXT;
`;

/**
 * Upgrades a version 1 to 10 database to version 11, after the other upgrades: the event's
 * conversation key (null for the events already stored). `SCHEMA_SQL` then creates the
 * `session_turns` table and the index of conversations' pending events.
 */
const UPGRADE_TO_11_SESSION_SQL = "ALTER TABLE events ADD COLUMN session_key TEXT";

/**
 * Upgrades a version 1 to 10 database to version 11, after the other upgrades: an event's
 * coalescing key and the event whose run answered it (null for the events already stored).
 */
const UPGRADE_TO_11_COALESCE_SQL = `
ALTER TABLE events ADD COLUMN coalesce_key TEXT;
ALTER TABLE events ADD COLUMN coalesced_into TEXT;
`;

/**
 * Upgrades a version 1 to 10 database to version 11, after the other upgrades: the JSON an
 * event's transform printed (docs/subscriptions.md#transforms), null for the events already
 * stored and while a transform is pending.
 */
const UPGRADE_TO_11_TRANSFORM_SQL = "ALTER TABLE events ADD COLUMN transformed TEXT";

/**
 * Brings a database to {@link SCHEMA_VERSION}: creates the tables of a new one, upgrades an older
 * one in place, in one transaction.
 * @param db the open connection
 * @param transaction runs a function between BEGIN and COMMIT
 * @throws Error when the database was written by a newer version of the program
 */
export function createOrUpgradeSchema(
  db: DatabaseSync,
  transaction: (run: () => void) => void,
): void {
  const row = db.prepare("PRAGMA user_version").get() as { user_version: number };
  if (row.user_version === SCHEMA_VERSION) return;
  if (row.user_version > SCHEMA_VERSION) {
    throw new Error(`schema version ${row.user_version} is newer than this program's`);
  }
  transaction(() => {
    const hasKeysTable = db.prepare(
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'idempotency_keys'",
    ).get() !== undefined;
    const columns = (table: string) =>
      db.prepare(`SELECT name FROM pragma_table_info('${table}')`).all();
    const eventColumns = columns("events");
    const attemptColumns = columns("attempts");
    const lacks = (column: string, of = eventColumns) =>
      of.length > 0 && !of.some((row) => row.name === column);
    if (hasKeysTable) db.exec(UPGRADE_TO_3_SQL);
    if (lacks("uncounted_attempts")) db.exec(UPGRADE_TO_5_SQL);
    if (lacks("replayed_at")) db.exec(UPGRADE_TO_8_SQL);
    db.exec(UPGRADE_TO_9_SQL);
    if (lacks("headers")) db.exec(UPGRADE_TO_10_EVENTS_SQL);
    if (lacks("provider", attemptColumns)) db.exec(UPGRADE_TO_10_ATTEMPTS_SQL);
    if (lacks("coalesce_key")) db.exec(UPGRADE_TO_11_COALESCE_SQL);
    if (lacks("transformed")) db.exec(UPGRADE_TO_11_TRANSFORM_SQL);
    if (lacks("session_key")) db.exec(UPGRADE_TO_11_SESSION_SQL);
    db.exec(SCHEMA_SQL);
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
  });
}
