/**
 * Tables of the PostgreSQL state database, created or upgraded in place when a store opens; rows
 * become records in `../_rows.ts`. The tables hold what SQLite's do (`lib/state/sqlite/`), with
 * what several gateways sharing one database need besides: the lease of a running event.
 *
 * @module
 */
import type postgres from "postgres";

/** Bumped when the tables change; stored in `agent_schema`. */
export const SCHEMA_VERSION = 2;

/** Any key of a transaction-level advisory lock: the one gateways take to create the tables. */
const SCHEMA_LOCK = 7_242_024;

/**
 * The tables. `seq` numbers rows in insertion order, as SQLite's rowid does: listing newest
 * first and "the attempt now open" follow it. Indexes are partial where SQLite's are:
 *
 * - `events_key`: the idempotency key is the event row itself, and this unique index over the
 *   rows that hold one makes the duplicate check part of the insert, in every gateway at once.
 * - `events_due`, `events_due_delivery`: the queued events (all, and those whose next step is a
 *   delivery), in the order the worker claims them.
 * - `events_leases`: the running events by when their lease ends, so that any gateway claims
 *   again the events of one that died.
 * - `events_finished`: delivered and failed events by when they came in, which retention
 *   deletes.
 * - `events_coalesce`, `events_coalesced_into`: a coalescing key's queued events (the window a
 *   new one slides), and the events folded into a run (docs/subscriptions.md#coalescing).
 * - `events_session`: the queued and running events of conversations, so a claim tells whether
 *   an earlier event of the same key waits or runs; `session_turns` holds each run's prompt and
 *   answer (docs/subscriptions.md#conversations).
 *
 * `lease_token` is the claim's own random token: every outcome write names it, so a run whose
 * lease ended (its event claimed again elsewhere) records nothing. `lease_expires_at` is when
 * the lease ends, in ms since the epoch, moved on by the claiming store's heartbeat.
 * `lease_owner` is the claiming gateway's id: started again, it requeues its own runs at once.
 *
 * `gateways` holds a row per open store, its heartbeat (`_presence.ts`), from version 2 on.
 */
const SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS agent_schema (version integer NOT NULL);
CREATE TABLE IF NOT EXISTS events (
  seq bigserial PRIMARY KEY,
  id text NOT NULL UNIQUE,
  subscription text NOT NULL,
  event_type text NOT NULL,
  delivery_id text NOT NULL,
  dedupe boolean NOT NULL,
  source text NOT NULL,
  mode text NOT NULL,
  payload text NOT NULL,
  prompt text NOT NULL,
  route text NOT NULL,
  received_at bigint NOT NULL,
  status text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at bigint,
  response text,
  parts_sent integer NOT NULL DEFAULT 0,
  uncounted_attempts integer NOT NULL DEFAULT 0,
  last_error text,
  updated_at bigint NOT NULL,
  key_expires_at bigint,
  replayed_at bigint,
  headers text,
  scheme text,
  lease_token text,
  lease_expires_at bigint,
  lease_owner text,
  coalesce_key text,
  coalesced_into text,
  session_key text,
  transformed text
);
CREATE UNIQUE INDEX IF NOT EXISTS events_key ON events (subscription, delivery_id)
  WHERE key_expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_due ON events (next_attempt_at, seq) WHERE status = 'queued';
CREATE INDEX IF NOT EXISTS events_due_delivery ON events (next_attempt_at, seq)
  WHERE status = 'queued' AND (mode = 'direct' OR response IS NOT NULL);
CREATE INDEX IF NOT EXISTS events_leases ON events (lease_expires_at) WHERE status = 'running';
CREATE INDEX IF NOT EXISTS events_subscription ON events (subscription, seq);
CREATE INDEX IF NOT EXISTS events_finished ON events (received_at)
  WHERE status IN ('delivered', 'failed');
CREATE INDEX IF NOT EXISTS events_direct_parts ON events (subscription, delivery_id)
  WHERE mode = 'direct' AND status = 'failed' AND parts_sent > 0;
CREATE INDEX IF NOT EXISTS events_received ON events (received_at);
CREATE INDEX IF NOT EXISTS events_updated ON events (updated_at)
  WHERE status IN ('delivered', 'failed');
CREATE INDEX IF NOT EXISTS events_coalesce ON events (subscription, coalesce_key, seq)
  WHERE status = 'queued' AND coalesce_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_coalesced_into ON events (coalesced_into, seq)
  WHERE coalesced_into IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_session ON events (subscription, session_key, seq)
  WHERE session_key IS NOT NULL AND status IN ('queued', 'running');
CREATE TABLE IF NOT EXISTS session_turns (
  seq bigserial PRIMARY KEY,
  subscription text NOT NULL,
  session_key text NOT NULL,
  event_id text NOT NULL,
  prompt text NOT NULL,
  answer text NOT NULL,
  created_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS session_turns_key ON session_turns (subscription, session_key, seq);
CREATE INDEX IF NOT EXISTS session_turns_created ON session_turns (created_at);
CREATE TABLE IF NOT EXISTS attempts (
  seq bigserial PRIMARY KEY,
  event_id text NOT NULL,
  attempt integer NOT NULL,
  started_at bigint NOT NULL,
  finished_at bigint,
  step text NOT NULL,
  error text,
  provider text,
  model text,
  prompt_tokens integer,
  completion_tokens integer,
  run_ms bigint,
  answer text
);
CREATE INDEX IF NOT EXISTS attempts_event ON attempts (event_id, seq);
CREATE TABLE IF NOT EXISTS parts (
  seq bigserial PRIMARY KEY,
  event_id text NOT NULL,
  part integer NOT NULL,
  parts integer NOT NULL,
  target text NOT NULL,
  chat text NOT NULL,
  message_id text,
  url text,
  sent_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS parts_event ON parts (event_id, seq);
CREATE TABLE IF NOT EXISTS gateways (
  id text PRIMARY KEY,
  ingests boolean NOT NULL,
  seen_at timestamptz NOT NULL
);
`;

/**
 * Creates the tables, or upgrades those an older version created, under an advisory lock so
 * that gateways starting together do it once; refuses tables a newer version wrote. Tables of
 * this version are only checked.
 * @param sql the pool
 * @throws Error when the schema is newer than this program's, or the database refuses
 */
export async function createOrUpgradeSchema(sql: postgres.Sql): Promise<void> {
  await sql.begin(async (tx) => {
    await tx.unsafe(`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK})`);
    const [table] = await tx.unsafe("SELECT to_regclass('agent_schema') IS NOT NULL AS found");
    const [row] = table.found
      ? await tx.unsafe("SELECT coalesce(max(version), 0) AS version FROM agent_schema")
      : [{ version: 0 }];
    const version = Number(row?.version ?? 0);
    if (version > SCHEMA_VERSION) {
      throw new Error(`schema version ${version} is newer than this program's`);
    }
    if (version === SCHEMA_VERSION) return;
    // Upgrades of an older version's tables go here (ALTER TABLE ... ADD COLUMN IF NOT EXISTS),
    // before SCHEMA_SQL creates what is missing, indexes of new columns included. Version 2
    // only adds the `gateways` table, which SCHEMA_SQL creates.
    await tx.unsafe(SCHEMA_SQL);
    await tx.unsafe("DELETE FROM agent_schema");
    await tx.unsafe(`INSERT INTO agent_schema (version) VALUES (${SCHEMA_VERSION})`);
  });
}
