/**
 * Opening the SQLite file: folder, pragmas, schema, prepared statements, transactions.
 *
 * @module
 */
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { dirname } from "node:path";
import { StoreUnavailableError } from "../../errors.ts";
import { type Checkpointer, startCheckpointer } from "./_checkpointer.ts";
import { errorMessage } from "../../errors.ts";
import {
  SCHEMA_SQL,
  SCHEMA_VERSION,
  UPGRADE_TO_3_SQL,
  UPGRADE_TO_5_SQL,
  UPGRADE_TO_8_SQL,
  UPGRADE_TO_9_SQL,
} from "./_schema.ts";

/** How the file is opened. */
export interface DatabaseOptions {
  /**
   * `NORMAL` (default): in WAL mode a COMMIT survives a crash of the process (kill -9) but the
   * last transactions may be lost on power loss or an OS crash. `FULL`: fsync on every COMMIT,
   * survives power loss, costs throughput (one fsync per group commit).
   */
  synchronous?: "NORMAL" | "FULL";
  /** How long a write waits for another connection's lock, in ms. @default {5000} */
  busyTimeoutMs?: number;
  /** Largest the database may grow, in bytes; past it writes fail as on a full disk. */
  maxDatabaseBytes?: number;
  /**
   * Run WAL checkpoints on a worker thread (see `_checkpointer.ts`) instead of inside the
   * commits of the event loop. The gateway wants this; a short-lived CLI command does not need
   * the thread. @default {true}
   */
  backgroundCheckpoints?: boolean;
}

const EVENT_COLUMNS = "id, subscription, event_type, delivery_id, dedupe, source, mode, payload, " +
  "prompt, route, received_at, status, attempts, next_attempt_at, response, parts_sent, " +
  "last_error, updated_at, key_expires_at";

/**
 * SQLite's primary result codes for a file that is not a sound database: SQLITE_CORRUPT (11)
 * and SQLITE_NOTADB (26). https://sqlite.org/rescode.html
 */
const CORRUPT = new Set([11, 26]);

/**
 * SQLite's message when `error`, or an error it was caused by, says the file is corrupt.
 * @param error what a database call threw
 * @returns the message, or undefined for any other failure (a lock, a full disk)
 */
export function corruption(error: unknown): string | undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    const code = (cause as { errcode?: unknown }).errcode;
    if (typeof code === "number" && CORRUPT.has(code & 0xff)) return cause.message;
  }
  return undefined;
}

/**
 * What to do about a corrupt state database, for error messages.
 * @param path the database file
 * @returns one sentence naming the file and the ways out
 */
export function corruptionAdvice(path: string): string {
  return `${path} is corrupt: restore a backup, or salvage what it holds with sqlite3 ` +
    `(".recover", which needs a sqlite3 with the dbpage table, or ".dump"); see the README`;
}

/**
 * The message of a failed database call: SQLite's words, and {@link corruptionAdvice} when they
 * say the file is corrupt.
 * @param error what the call threw
 * @param path the database file
 */
export function databaseErrorText(error: unknown, path: string): string {
  const advice = corruption(error) === undefined ? "" : `. ${corruptionAdvice(path)}`;
  return errorMessage(error) + advice;
}

/** Size the WAL file is cut back to when it starts over (64 MiB, four times the checkpointer's). */
const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/** The row that holds an idempotency key (see `events_key` in `_schema.ts`). */
const KEY_HOLDER = "subscription = ? AND delivery_id = ? AND key_expires_at IS NOT NULL";

const CLOSE_ATTEMPT = "UPDATE attempts SET finished_at = ?, step = ?, error = ? " +
  "WHERE rowid = (SELECT max(rowid) FROM attempts WHERE event_id = ?)";

/** The statements the store runs often, prepared once (exported for query-plan tests). */
export const STATEMENTS = {
  keyHolder: `SELECT id, key_expires_at FROM events WHERE ${KEY_HOLDER}`,
  releaseKey: `UPDATE events SET key_expires_at = NULL WHERE ${KEY_HOLDER}`,
  // A row that would take a key already held is not inserted (changes = 0).
  insertEvent: `INSERT INTO events (${EVENT_COLUMNS}) VALUES (${Array(19).fill("?").join(", ")}) ` +
    "ON CONFLICT (subscription, delivery_id) WHERE key_expires_at IS NOT NULL DO NOTHING",
  insertAttempt: "INSERT INTO attempts (event_id, attempt, started_at, finished_at, step, error) " +
    "VALUES (?, ?, ?, ?, ?, ?)",
  due: "SELECT * FROM events WHERE status = 'queued' AND next_attempt_at <= ? " +
    "ORDER BY next_attempt_at, rowid LIMIT ?",
  claim: "UPDATE events SET status = 'running', attempts = attempts + 1, " +
    "next_attempt_at = NULL, updated_at = ? WHERE id = ?",
  saveResponse: "UPDATE events SET response = ?, updated_at = ? WHERE id = ?",
  agentDone: "UPDATE attempts SET step = 'delivery' " +
    "WHERE rowid = (SELECT max(rowid) FROM attempts WHERE event_id = ?)",
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
  nextDue: "SELECT min(next_attempt_at) AS due FROM events WHERE status = 'queued'",
  // The same, among the events whose next step is a delivery, through their own index.
  dueForDelivery: "SELECT * FROM events INDEXED BY events_due_delivery WHERE status = 'queued' " +
    "AND (mode = 'direct' OR response IS NOT NULL) AND next_attempt_at <= ? " +
    "ORDER BY next_attempt_at, rowid LIMIT ?",
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

/** An open database with its statements and a transaction runner. */
export interface Database {
  db: DatabaseSync;
  statements: Statements;
  /**
   * Runs `run` between BEGIN IMMEDIATE and COMMIT; rolls back and rethrows when it throws.
   * IMMEDIATE takes the write lock up front, so a busy database fails here, within
   * `busyTimeoutMs`, instead of half-way through.
   */
  transaction(run: () => void): void;
  /** What a group commit waits for before it begins (the checkpointer's gate), if anything. */
  beforeBatch(): Promise<void> | undefined;
  /**
   * Resolves once a checkpoint pass has run past every commit so far (at once without the
   * checkpoint thread), or after `maxMs`: the next write then starts the WAL over, unless a
   * reader in another process held the pass back.
   */
  checkpointed(maxMs: number): Promise<void>;
  /** Stops the checkpoint thread, then closes the connection. */
  close(): Promise<void>;
}

/**
 * Refuses a database file of 0 bytes beside a write-ahead log that holds frames: SQLite, opening
 * it, would delete the log (events the gateway acknowledged, if the file was emptied by
 * accident or damage) and the gateway would start on a new, empty database.
 * @param path the database file
 * @throws Error saying what to do, with both files' names
 */
function refuseEmptyFileBesideLog(path: string): void {
  const size = (file: string) => {
    try {
      return Deno.statSync(file).size;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return undefined;
      throw error;
    }
  };
  const logBytes = size(`${path}-wal`) ?? 0;
  if (size(path) !== 0 || logBytes === 0) return;
  throw new Error(
    `it is empty, but ${path}-wal beside it holds ${logBytes} bytes of its last writes, which ` +
      "opening it would delete. Restore the database file from a backup, or move the -wal " +
      "file away to start on an empty database",
  );
}

/**
 * Opens (creating when missing) the database file and its folder (mode 0700).
 * @param path the database file, or `:memory:`
 * @param options pragmas
 * @returns the open database
 * @throws StoreUnavailableError when the folder or file cannot be created or opened
 */
export function openDatabase(path: string, options: DatabaseOptions): Database {
  let db: DatabaseSync | undefined;
  try {
    if (path !== ":memory:") {
      Deno.mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      refuseEmptyFileBesideLog(path);
    }
    db = new DatabaseSync(path);
    db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`);
    db.exec("PRAGMA journal_mode = WAL");
    // A WAL that a burst or a big prune grew is cut back to this size when it starts over, not
    // kept at its largest until the gateway stops (nor holding copies of pruned payloads).
    db.exec(`PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
    db.exec(`PRAGMA synchronous = ${options.synchronous === "FULL" ? "FULL" : "NORMAL"}`);
    // A pruned payload is overwritten with zeros, overflow pages included, not left readable in
    // the file's free space (FAST leaves the freed overflow pages of a payload over a page, most
    // real ones, as they were: https://sqlite.org/pragma.html#pragma_secure_delete).
    db.exec("PRAGMA secure_delete = ON");
    if (options.maxDatabaseBytes !== undefined) limitSize(db, options.maxDatabaseBytes);
    createSchema(db);
    const statements = Object.fromEntries(
      Object.entries(STATEMENTS).map(([name, sql]) => [name, db!.prepare(sql)]),
    ) as Statements;
    const opened = db;
    const checkpointer = path === ":memory:" || options.backgroundCheckpoints === false
      ? undefined
      : backgroundCheckpoints(opened, path);
    return {
      db,
      statements,
      transaction(run) {
        transaction(opened, run);
        checkpointer?.afterCommit();
      },
      beforeBatch: () => checkpointer?.beforeCommit(),
      checkpointed: (maxMs) => checkpointer?.caughtUp(maxMs) ?? Promise.resolve(),
      async close() {
        await checkpointer?.close();
        opened.close();
      },
    };
  } catch (cause) {
    try {
      db?.close();
    } catch { /* already failing: report the first error */ }
    throw new StoreUnavailableError(
      `Cannot open the state database ${path}: ${databaseErrorText(cause, path)}`,
      { cause },
    );
  }
}

/** Moves WAL checkpoints off the event loop; SQLite's own stay on when that is not possible. */
function backgroundCheckpoints(db: DatabaseSync, path: string): Checkpointer | undefined {
  const { synchronous } = db.prepare("PRAGMA synchronous").get() as { synchronous: number };
  const checkpointer = startCheckpointer(path, {
    synchronous: synchronous >= 2 ? "FULL" : "NORMAL",
    onFailure: () => {
      if (db.isOpen) db.exec("PRAGMA wal_autocheckpoint = 1000");
    },
  });
  if (checkpointer) db.exec("PRAGMA wal_autocheckpoint = 0");
  return checkpointer;
}

function createSchema(db: DatabaseSync): void {
  const row = db.prepare("PRAGMA user_version").get() as { user_version: number };
  if (row.user_version === SCHEMA_VERSION) return;
  if (row.user_version > SCHEMA_VERSION) {
    throw new Error(`schema version ${row.user_version} is newer than this program's`);
  }
  transaction(db, () => {
    const hasKeysTable = db.prepare(
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'idempotency_keys'",
    ).get() !== undefined;
    const eventColumns = db.prepare("SELECT name FROM pragma_table_info('events')").all();
    if (hasKeysTable) db.exec(UPGRADE_TO_3_SQL);
    if (eventColumns.length > 0 && !eventColumns.some((row) => row.name === "uncounted_attempts")) {
      db.exec(UPGRADE_TO_5_SQL);
    }
    if (eventColumns.length > 0 && !eventColumns.some((row) => row.name === "replayed_at")) {
      db.exec(UPGRADE_TO_8_SQL);
    }
    db.exec(UPGRADE_TO_9_SQL);
    db.exec(SCHEMA_SQL);
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
  });
}

function limitSize(db: DatabaseSync, maxBytes: number): void {
  const { page_size } = db.prepare("PRAGMA page_size").get() as { page_size: number };
  db.exec(`PRAGMA max_page_count = ${Math.max(1, Math.floor(maxBytes / page_size))}`);
}

function transaction(db: DatabaseSync, run: () => void): void {
  db.exec("BEGIN IMMEDIATE");
  try {
    run();
    db.exec("COMMIT");
  } catch (error) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw error;
  }
}
