/**
 * The subscriptions in PostgreSQL, as a {@link SubscriptionSource}, for gateways sharing one
 * database (docs/scaling.md): the `subscriptions` table holds one row per record (the name, the
 * record as JSONB, when it last changed). An update locks the table against other writers for
 * its transaction, so concurrent commands on any host never lose one another's change, and
 * notifies `agent_subscriptions` on commit; every watching gateway reads the records again when
 * told, and every `pollMs` in case a notification was missed (a dropped connection).
 *
 * @module
 */
import postgres from "postgres";
import { connectionOptions, describe } from "../state/postgres/mod.ts";
import { ConfigError, StoreUnavailableError } from "../errors.ts";
import { checkedRecords, type SubscriptionRecords } from "./file_store.ts";
import { SUBSCRIPTION_RECHECK_MS } from "./file_cache.ts";
import type { SubscriptionSource, SubscriptionWatch, WatchOptions } from "./source.ts";

/** The channel an update notifies on commit. */
export const SUBSCRIPTIONS_CHANNEL = "agent_subscriptions";

/** How often a watch reads the records whatever it was told, in ms. */
export const SUBSCRIPTIONS_POLL_MS = 5000;

/** Any key of a transaction-level advisory lock: the one sources take to create the table. */
const TABLE_LOCK = 7_242_031;

const TABLE_SQL = `
CREATE TABLE IF NOT EXISTS subscriptions (
  name text PRIMARY KEY,
  record jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
)`;

/**
 * How messages name the table of a database, without its credentials.
 * @param url the connection URL
 * @returns `PostgreSQL db.example.com:5432/agent (table subscriptions)`
 */
export function postgresWhere(url: string): string {
  return `PostgreSQL ${describe(url)} (table subscriptions)`;
}

/**
 * Connects to the database and creates the `subscriptions` table when missing.
 * @param url a PostgreSQL connection URL (`state.url` or `DATABASE_URL`); never put in a message
 * @param options `pollMs`: how often a watch reads the records whatever it was told, in ms
 *   (@default {5000}); `tlsCaPem`: as the state store's (lib/state/postgres/mod.ts)
 * @returns the source; close it with `close()`
 * @throws StoreUnavailableError when the server cannot be reached or refuses the table
 */
export async function openPostgresSubscriptions(
  url: string,
  options: { pollMs?: number; tlsCaPem?: string } = {},
): Promise<SubscriptionSource> {
  const where = postgresWhere(url);
  // Two connections: a watch's reads beside an update; LISTEN takes a connection of its own.
  const sql = postgres(url, connectionOptions(url, { poolSize: 2, tlsCaPem: options.tlsCaPem }));
  try {
    await sql.begin(async (tx) => {
      await tx.unsafe(`SELECT pg_advisory_xact_lock(${TABLE_LOCK})`);
      await tx.unsafe(TABLE_SQL);
    });
  } catch (cause) {
    await sql.end({ timeout: 1 }).catch(() => {});
    throw unavailable(cause, where);
  }
  const watches = new Set<SubscriptionWatch>();
  const source: SubscriptionSource = {
    where,
    read: () => guarded(where, () => readAll(sql, where)),
    update(change) {
      const thrown = new Set<unknown>();
      const watched: typeof change = async (records) => {
        try {
          return await change(records);
        } catch (error) {
          thrown.add(error);
          throw error;
        }
      };
      return guarded(where, () => updateAll(sql, where, watched), (error) => thrown.has(error));
    },
    async watch(watchOptions = {}) {
      const watch = await startWatch(sql, {
        ...watchOptions,
        where,
        pollMs: options.pollMs ?? SUBSCRIPTIONS_POLL_MS,
      });
      watches.add(watch);
      return watch;
    },
    async close() {
      for (const watch of watches) await watch.stop();
      await sql.end({ timeout: 5 });
    },
  };
  return source;
}

/**
 * Runs a call, reporting failures of the database as StoreUnavailableError; a ConfigError (a
 * stored record that is not an object) and what `own` says the caller's code threw pass as
 * they are.
 */
async function guarded<T>(
  where: string,
  run: () => Promise<T>,
  own: (error: unknown) => boolean = () => false,
): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw unavailable(error, where, own(error));
  }
}

/** The error a failed call rejects with. */
function unavailable(error: unknown, where: string, own = false): Error {
  if (own || error instanceof ConfigError || error instanceof StoreUnavailableError) {
    return error as Error;
  }
  const text = error instanceof Error ? error.message : String(error);
  return new StoreUnavailableError(`Cannot reach the subscriptions in ${where}: ${text}`, {
    cause: error,
  });
}

/** Every record, checked as the file's are. */
async function readAll(db: postgres.ISql, where: string): Promise<SubscriptionRecords> {
  const rows = await db.unsafe<{ name: string; record: string }[]>(
    "SELECT name, record::text AS record FROM subscriptions ORDER BY name",
  );
  return checkedRecords(rows.map((row) => [row.name, JSON.parse(row.record)]), where);
}

/**
 * The read-modify-write of {@link SubscriptionSource.update}: the table is locked against other
 * writers (readers go on), the changed rows written, and the watchers told on commit.
 */
async function updateAll<T>(
  sql: postgres.Sql,
  where: string,
  change: (records: SubscriptionRecords) => T | Promise<T>,
): Promise<T> {
  return await sql.begin(async (tx) => {
    await tx.unsafe("LOCK TABLE subscriptions IN SHARE ROW EXCLUSIVE MODE");
    const records = await readAll(tx, where);
    const before = new Map(Object.entries(records).map(([name, r]) => [name, JSON.stringify(r)]));
    const result = await change(records);
    let changed = false;
    for (const name of before.keys()) {
      if (Object.hasOwn(records, name)) continue;
      await tx.unsafe("DELETE FROM subscriptions WHERE name = $1", [name]);
      changed = true;
    }
    for (const [name, record] of Object.entries(records)) {
      const json = JSON.stringify(record);
      if (before.get(name) === json) continue;
      await tx.unsafe(
        "INSERT INTO subscriptions (name, record, updated_at) VALUES ($1, $2::text::jsonb, now()) " +
          "ON CONFLICT (name) DO UPDATE SET record = EXCLUDED.record, updated_at = now()",
        [name, json],
      );
      changed = true;
    }
    if (changed) await tx.unsafe(`NOTIFY ${SUBSCRIPTIONS_CHANNEL}`);
    return result;
  }) as T;
}

/**
 * A copy of the records kept up to date: read at the start (which throws when the database
 * cannot be reached), then again on each notification, on each reconnection of the listening
 * connection, every `pollMs`, and when a caller asks for a fresh copy (at most once per
 * {@link SUBSCRIPTION_RECHECK_MS}). Reads never overlap: one asked for during another runs after
 * it.
 */
async function startWatch(
  sql: postgres.Sql,
  options: WatchOptions & { where: string; pollMs: number },
): Promise<SubscriptionWatch> {
  let records = await guarded(options.where, () => readAll(sql, options.where));
  let text = JSON.stringify(records);
  options.onReload?.(records); // as the file's watch does at its first read
  let error: Error | undefined;
  let freshAtMs = -Infinity;
  const setError = (next: Error | undefined) => {
    const changed = next?.message !== error?.message;
    error = next;
    if (changed) options.onErrorChange?.(next, records);
  };
  const reloads = serialized(async () => {
    try {
      const read = await guarded(options.where, () => readAll(sql, options.where));
      const readText = JSON.stringify(read);
      if (readText !== text) {
        [records, text] = [read, readText];
        options.onReload?.(records);
      }
      setError(undefined);
    } catch (failure) {
      setError(failure as Error);
    }
  });
  const reload = () => reloads.run();
  const listening = await guarded(
    options.where,
    () => sql.listen(SUBSCRIPTIONS_CHANNEL, reload, reload),
  );
  const poll = setInterval(reload, options.pollMs);
  return {
    current(currentOptions = {}) {
      const nowMs = performance.now();
      if (currentOptions.fresh && nowMs - freshAtMs >= SUBSCRIPTION_RECHECK_MS) {
        freshAtMs = nowMs;
        reloads.run();
      }
      return records;
    },
    get lastError() {
      return error;
    },
    async stop() {
      clearInterval(poll);
      await listening.unlisten().catch(() => {});
      await reloads.stop();
    },
  };
}

/**
 * Runs `task` when asked, never twice at once: asked during a run, it runs once more after it,
 * since what changed during a read may have been read before the change.
 * @returns `run()`, which asks, and `stop()`, after which asking does nothing, resolving once
 *   the run under way has ended
 */
function serialized(task: () => Promise<void>): { run(): void; stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  const run = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = task().finally(() => {
      running = undefined;
      if (!again) return;
      again = false;
      run();
    });
  };
  return {
    run,
    async stop() {
      stopped = true;
      await running;
    },
  };
}
