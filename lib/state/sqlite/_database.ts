/**
 * Opening the SQLite file: folder, pragmas, schema, prepared statements, transactions.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { dirname } from "node:path";
import { StoreUnavailableError } from "../../errors.ts";
import { type Checkpointer, startCheckpointer } from "./_checkpointer.ts";
import { databaseErrorText } from "./_corruption.ts";
import { createOrUpgradeSchema } from "./_schema.ts";
import { prepareStatements, type Statements } from "./_statements.ts";

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

/** Size the WAL file is cut back to when it starts over (64 MiB, four times the checkpointer's). */
const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

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
    const opened = db = new DatabaseSync(path);
    setPragmas(opened, options);
    createOrUpgradeSchema(opened, (run) => transaction(opened, run));
    const statements = prepareStatements(opened);
    const checkpointer = path === ":memory:" || options.backgroundCheckpoints === false
      ? undefined
      : backgroundCheckpoints(opened, path);
    return databaseWith(opened, statements, checkpointer);
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

/** The connection's settings: lock wait, WAL and its size, durability, erasure, size limit. */
function setPragmas(db: DatabaseSync, options: DatabaseOptions): void {
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
}

/** The {@link Database} of an open connection, with its checkpointer when it has one. */
function databaseWith(
  db: DatabaseSync,
  statements: Statements,
  checkpointer: Checkpointer | undefined,
): Database {
  return {
    db,
    statements,
    transaction(run) {
      transaction(db, run);
      checkpointer?.afterCommit();
    },
    beforeBatch: () => checkpointer?.beforeCommit(),
    checkpointed: (maxMs) => checkpointer?.caughtUp(maxMs) ?? Promise.resolve(),
    async close() {
      await checkpointer?.close();
      db.close();
    },
  };
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
