/**
 * Copying a home's SQLite state (`state/gateway.db`) into a PostgreSQL state database, for
 * `agent state migrate --to postgres` (docs/scaling.md#moving-a-home-to-postgresql): the events
 * with their attempts, message parts and conversation turns, each event once. The SQLite file is
 * only read.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import postgres from "postgres";
import { StoreUnavailableError } from "../errors.ts";
import { connectionOptions, describe, openPostgresStore } from "./postgres/mod.ts";
import { SCHEMA_VERSION as SQLITE_SCHEMA_VERSION } from "./sqlite/mod.ts";

/** What one import copied, and what it found there already. */
export interface EventImport {
  /** Events copied. */
  events: number;
  /** Events skipped: one with their id is in the database already (an earlier import). */
  alreadyThere: number;
  /** Attempts, message parts and conversation turns copied with the events. */
  attempts: number;
  parts: number;
  turns: number;
}

/** Events read from SQLite and written to PostgreSQL at once. */
const BATCH_EVENTS = 500;

/** Any key of a transaction-level advisory lock: imports running at once take turns. */
const IMPORT_LOCK = 7_242_032;

/** The tables that hang off an event, by the column naming it, in the order they are copied. */
const CHILD_TABLES = ["attempts", "parts", "session_turns"] as const;

/**
 * Copies the events of a SQLite state database into a PostgreSQL one, in one transaction: an
 * event whose id the database already holds is skipped with all that hangs off it, so a second
 * import of the same file copies nothing. An event whose delivery id's idempotency key another
 * event in the database holds comes without the key. Running events (the gateway that ran them
 * stopped) come with no lease, so the first gateway on the database runs them again.
 * @param sqlitePath the SQLite file (`state/gateway.db`); read only, never changed
 * @param url the PostgreSQL connection URL; never put in a message
 * @param options `tlsCaPem`: the CA certificate, as the state store's
 * @returns what was copied
 * @throws StoreUnavailableError when the file cannot be read, a newer version wrote it, or the
 *   database cannot be reached or refuses the rows (nothing is copied then)
 */
export async function importSqliteEvents(
  sqlitePath: string,
  url: string,
  options: { tlsCaPem?: string } = {},
): Promise<EventImport> {
  const counts: EventImport = { events: 0, alreadyThere: 0, attempts: 0, parts: 0, turns: 0 };
  const lite = openReadOnly(sqlitePath);
  try {
    // Opening a store creates the tables, or upgrades them, as a gateway would.
    await (await openPostgresStore(url, { poolSize: 1, ...options })).close();
    const sql = postgres(url, connectionOptions(url, { poolSize: 1, ...options }));
    try {
      await sql.begin(async (tx) => {
        await tx.unsafe(`SELECT pg_advisory_xact_lock(${IMPORT_LOCK})`);
        const columns = await columnsOf(tx, lite);
        for (let after = 0;;) {
          const rows = lite.prepare(
            "SELECT rowid AS sqlite_rowid, * FROM events WHERE rowid > ? ORDER BY rowid LIMIT ?",
          ).all(after, BATCH_EVENTS) as Record<string, unknown>[];
          if (rows.length === 0) break;
          after = Number(rows.at(-1)!.sqlite_rowid);
          await importBatch(tx, { lite, rows, columns, counts });
        }
      });
    } finally {
      await sql.end({ timeout: 5 });
    }
  } catch (cause) {
    if (cause instanceof StoreUnavailableError) throw cause;
    const text = cause instanceof Error ? cause.message : String(cause);
    throw new StoreUnavailableError(`Cannot import into ${describe(url)}: ${text}`, { cause });
  } finally {
    lite.close();
  }
  return counts;
}

/** The SQLite file, read only; refused when a newer version wrote it. */
function openReadOnly(path: string): DatabaseSync {
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(path, { readOnly: true });
    db.exec("PRAGMA busy_timeout = 5000");
  } catch (cause) {
    throw new StoreUnavailableError(
      `Cannot read the state database ${path}: ${(cause as Error).message}`,
      { cause },
    );
  }
  const { user_version: version } = db.prepare("PRAGMA user_version").get() as {
    user_version: number;
  };
  if (version > SQLITE_SCHEMA_VERSION) {
    db.close();
    throw new StoreUnavailableError(
      `Cannot read the state database ${path}: schema version ${version} is newer than this ` +
        "program's; import it with the version that wrote it",
    );
  }
  return db;
}

/** Columns of each copied table, as both databases have them, with PostgreSQL's type. */
type Columns = Map<string, Map<string, string>>;

/**
 * The columns to copy for each table: those both databases have (an older SQLite file lacks a
 * few, which take PostgreSQL's default). A table the SQLite file lacks has none.
 */
async function columnsOf(tx: postgres.TransactionSql, lite: DatabaseSync): Promise<Columns> {
  const columns: Columns = new Map();
  for (const table of ["events", ...CHILD_TABLES]) {
    const inLite = new Set(
      (lite.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[])
        .map((row) => row.name),
    );
    const inPg = await tx.unsafe<{ column_name: string; data_type: string }[]>(
      "SELECT column_name, data_type FROM information_schema.columns " +
        "WHERE table_schema = current_schema() AND table_name = $1",
      [table],
    );
    columns.set(
      table,
      new Map(
        inPg.filter((row) => inLite.has(row.column_name))
          .map((row) => [row.column_name, row.data_type]),
      ),
    );
  }
  return columns;
}

/** Copies one batch of events that the database does not hold yet, and what hangs off them. */
async function importBatch(
  tx: postgres.TransactionSql,
  batch: {
    lite: DatabaseSync;
    rows: Record<string, unknown>[];
    columns: Columns;
    counts: EventImport;
  },
): Promise<void> {
  const { lite, rows, columns, counts } = batch;
  const ids = rows.map((row) => String(row.id));
  const held = await tx.unsafe<{ id: string }[]>(
    "SELECT id FROM events WHERE id = ANY($1::text[])",
    [ids],
  );
  const skip = new Set(held.map((row) => row.id));
  const fresh = rows.filter((row) => !skip.has(String(row.id)));
  counts.alreadyThere += skip.size;
  if (fresh.length === 0) return;
  const keyed = await tx.unsafe<{ subscription: string; delivery_id: string }[]>(
    "SELECT subscription, delivery_id FROM events WHERE key_expires_at IS NOT NULL " +
      "AND subscription = ANY($1::text[]) AND delivery_id = ANY($2::text[])",
    [fresh.map((row) => String(row.subscription)), fresh.map((row) => String(row.delivery_id))],
  );
  const taken = new Set(keyed.map((row) => `${row.subscription}\n${row.delivery_id}`));
  const events = fresh.map((row) =>
    taken.has(`${row.subscription}\n${row.delivery_id}`) ? { ...row, key_expires_at: null } : row
  );
  await insertRows(tx, "events", events, columns.get("events")!);
  counts.events += events.length;
  const freshIds = events.map((row) => String(row.id));
  for (const table of CHILD_TABLES) {
    const tableColumns = columns.get(table)!;
    if (tableColumns.size === 0) continue;
    const marks = freshIds.map(() => "?").join(", ");
    const children = lite.prepare(
      `SELECT * FROM ${table} WHERE event_id IN (${marks}) ORDER BY rowid`,
    ).all(...freshIds) as Record<string, unknown>[];
    await insertRows(tx, table, children, tableColumns);
    const copied = children.length;
    if (table === "attempts") counts.attempts += copied;
    else if (table === "parts") counts.parts += copied;
    else counts.turns += copied;
  }
}

/** Rows inserted at once: PostgreSQL takes at most 65,535 parameters in a statement. */
const INSERT_CHUNK = 1000;

/** Inserts SQLite rows into a PostgreSQL table, in their order, converting 0/1 to booleans. */
async function insertRows(
  tx: postgres.TransactionSql,
  table: string,
  rows: Record<string, unknown>[],
  columns: Map<string, string>,
): Promise<void> {
  const names = [...columns.keys()];
  for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
    const chunk = rows.slice(start, start + INSERT_CHUNK).map((row) =>
      Object.fromEntries(names.map((name) => {
        const value = row[name] ?? null;
        const converted = columns.get(name) === "boolean" && value !== null
          ? Boolean(value)
          : typeof value === "bigint"
          ? value.toString()
          : value;
        return [name, converted];
      }))
    );
    await tx`INSERT INTO ${tx(table)} ${tx(chunk as postgres.Row[], names)}`;
  }
}
