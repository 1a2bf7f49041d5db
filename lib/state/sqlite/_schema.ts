/**
 * Tables of the state database, the mapping from rows to records, and event ids.
 *
 * @module
 */
import type { Attempt, EventSource, EventStatus, RouteSnapshot, StoredEvent } from "../mod.ts";

/** Bumped when the tables change; stored in `PRAGMA user_version`. */
export const SCHEMA_VERSION = 9;

/**
 * The tables. Events live in a rowid table, so rowid order is acceptance order and "newest
 * first" needs no index. Every index is paid for on the ingest path, so there are few:
 * the partial indexes only hold queued/running rows, and the idempotency key is the event row
 * itself: `key_expires_at` is set on the row that holds the key of its (subscription,
 * delivery_id), and a partial unique index over those rows makes the duplicate check part of
 * the insert. (Version 2 kept keys in a table of their own, a second b-tree keyed by a random
 * delivery id: `deno task bench:store` measured `accept()` at 57 to 69 µs per event with it and
 * 51 to 56 µs without, in waves of 20 events with a 2 KB payload.) Version 4 adds
 * `events_direct_parts`, which only holds failed direct deliveries that got some parts out, so
 * the sender's retry resumes after them; an agent-mode insert only evaluates its WHERE clause.
 * Version 5 adds `uncounted_attempts`: the attempts of the current series that delivered part
 * of a message before failing, which do not count toward the retry limit; and `events_failed`,
 * which holds the dead letters only, so `webhook events --status failed` does not read every
 * event (0.7 s on a 900 MB database) to find a few. Version 6 adds `events_failed_subscription`,
 * the dead letters by subscription, so `webhook events <name> --status failed` does not read
 * every dead letter to find that subscription's (40 ms against 0.4 ms among 200,000 dead
 * letters, warm). Version 7 adds `events_due_delivery`: the queued events whose next step is a
 * delivery (a direct message, or an agent's answer already saved), which the worker still
 * starts while the agent fails every run; it holds no agent-mode event waiting for its run, so
 * the ingest path does not write to it. Version 8 adds `replayed_at`: when the current series
 * of attempts was queued by a replay (null for the first series), so `webhook events` can tell
 * how long the replay took rather than how long ago the event first came in. Version 9 replaces
 * `events_received` (every event by when it came in) with `events_finished`, which holds only
 * delivered and failed events, the ones retention deletes: the ingest path no longer writes an
 * index entry for it, and a prune no longer walks past queued events older than the retention
 * window on every batch (100,000 of them made each batch of 250 take 0.4 to 1 s, the event
 * loop standing still meanwhile).
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
  replayed_at INTEGER
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
  error TEXT
);
CREATE INDEX IF NOT EXISTS attempts_event ON attempts(event_id);
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
`;

/**
 * Upgrades a version 1 or 2 database to version 3, inside the caller's transaction: each
 * idempotency key moves onto the event it points to, then the keys table goes. A key whose
 * event was already pruned is dropped with it. The join goes through the keys' primary key
 * (subscription, delivery_id), so it is linear in the number of events (40,000 keys: 182 ms
 * through `openStateStore`; matching on `event_id` alone scanned the keys table once per event,
 * 84 s).
 */
export const UPGRADE_TO_3_SQL = `
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
export const UPGRADE_TO_5_SQL =
  "ALTER TABLE events ADD COLUMN uncounted_attempts INTEGER NOT NULL DEFAULT 0";

/**
 * Upgrades a version 1 to 7 database to version 8, after the other upgrades: when a replay
 * queued the current series (null: none did, or before this version).
 */
export const UPGRADE_TO_8_SQL = "ALTER TABLE events ADD COLUMN replayed_at INTEGER";

/**
 * Upgrades a version 1 to 8 database to version 9, before `SCHEMA_SQL` creates
 * `events_finished`: the index of every event by when it came in goes.
 */
export const UPGRADE_TO_9_SQL = "DROP INDEX IF EXISTS events_received";

type Row = Record<string, unknown>;

/**
 * Text as the state database can give it back. `node:sqlite` reads a TEXT value only up to its
 * first U+0000, so a prompt rendered from a payload value holding one (`"title": "a\u0000b"`)
 * came back cut there: the agent, and every replay, got only the text before it. Each U+0000 is
 * stored as U+FFFD instead. (A payload's JSON text never holds one: JSON escapes it.)
 * @param text a prompt, an answer or an error message
 * @returns the text with each U+0000 replaced by U+FFFD
 */
export function storableText(text: string): string {
  return text.includes("\0") ? text.replaceAll("\0", "\uFFFD") : text;
}

/**
 * Whether an event's next step is an agent run: an agent-mode event without a saved answer.
 * The others (direct messages, answers waiting for their delivery) go straight to delivery;
 * `events_due_delivery` holds the queued ones among them.
 * @param event its mode and saved response
 */
export function needsAgentRun(event: Pick<StoredEvent, "mode" | "response">): boolean {
  return event.mode === "agent" && event.response === null;
}

/**
 * Turns an `events` row into a record.
 * @param row the row as `node:sqlite` returns it
 * @returns the stored event
 */
export function rowToEvent(row: Row): StoredEvent {
  return {
    id: String(row.id),
    subscription: String(row.subscription),
    // The column keeps its first name; it has always held the label.
    eventLabel: String(row.event_type),
    deliveryId: String(row.delivery_id),
    dedupe: row.dedupe === 1,
    source: String(row.source) as EventSource,
    mode: row.mode === "direct" ? "direct" : "agent",
    payload: String(row.payload),
    prompt: String(row.prompt),
    route: JSON.parse(String(row.route)) as RouteSnapshot,
    receivedAtMs: Number(row.received_at),
    status: String(row.status) as EventStatus,
    attempts: Number(row.attempts),
    nextAttemptAtMs: row.next_attempt_at === null ? null : Number(row.next_attempt_at),
    response: row.response === null ? null : String(row.response),
    partsSent: Number(row.parts_sent),
    uncountedAttempts: Number(row.uncounted_attempts ?? 0),
    lastError: row.last_error === null ? null : String(row.last_error),
    updatedAtMs: Number(row.updated_at),
    replayedAtMs: row.replayed_at === null || row.replayed_at === undefined
      ? null
      : Number(row.replayed_at),
  };
}

/**
 * Turns an `attempts` row into a record.
 * @param row the row as `node:sqlite` returns it
 * @returns the attempt
 */
export function rowToAttempt(row: Row): Attempt {
  return {
    eventId: String(row.event_id),
    attempt: Number(row.attempt),
    startedAtMs: Number(row.started_at),
    finishedAtMs: row.finished_at === null ? null : Number(row.finished_at),
    step: row.step === "delivery" ? "delivery" : "agent",
    error: row.error === null ? null : String(row.error),
  };
}

const RANDOM_SPACE = 36 ** 7;

/**
 * Makes a generator of event ids: `evt_` + 9 base-36 characters of milliseconds + 7 of
 * randomness (20 characters). Ids made by one generator sort in creation order: within one
 * millisecond the random part is incremented instead of redrawn (as ULIDs do).
 * @param now clock in milliseconds since the epoch
 * @param random a value in [0, 1)
 * @returns a function that returns a fresh id on each call
 */
export function createIdGenerator(now: () => number, random: () => number): () => string {
  let lastMs = -1;
  let lastRandom = 0;
  return () => {
    const ms = Math.max(now(), lastMs);
    if (ms === lastMs && lastRandom + 1 < RANDOM_SPACE) lastRandom += 1;
    else lastRandom = Math.floor(random() * (RANDOM_SPACE / 2));
    lastMs = ms;
    return "evt_" + ms.toString(36).padStart(9, "0") + lastRandom.toString(36).padStart(7, "0");
  };
}

/** A random value in [0, 1) from the platform's cryptographic generator. */
export function cryptoRandom(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0] / 2 ** 32;
}
