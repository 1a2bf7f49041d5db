/**
 * The SQLite implementation of {@link StateStore}: opens the database and puts together the
 * store's parts (accepting events, the worker's claims and outcomes, reading and replaying
 * events for the CLI), with pruning and closing.
 *
 * @module
 */
import { type DatabaseOptions, openDatabase } from "./_database.ts";
import type { GroupCommitStats } from "./_group_commit.ts";
import { prune } from "./_maintenance.ts";
import { createIdGenerator, cryptoRandom } from "./_schema.ts";
import { acceptOps } from "./_store_accept.ts";
import { claimOps } from "./_store_claims.ts";
import { createStoreCommits } from "./_store_commits.ts";
import { createStoreCore } from "./_store_core.ts";
import { readingOps } from "./_store_reading.ts";
import { replayOp } from "./_store_replay.ts";
import type { StateStore } from "../mod.ts";

/** Options of {@link openStateStore}. */
export interface StateStoreOptions extends DatabaseOptions {
  /** How long a delivery id is remembered, in seconds. @default {86400} */
  idempotencyTtlSeconds?: number;
  /** A batch is committed at once when it holds this many writes. @default {512} */
  maxBatch?: number;
  /** Event id generator. @default time-sortable `evt_` + 16 base-36 characters */
  newId?: () => string;
  /** Clock for what the store timestamps itself (direct-mode records). @default {Date.now} */
  now?: () => number;
  /**
   * Called once, the first time SQLite reports the file corrupt ("database disk image is
   * malformed", "file is not a database"), with its message: the gateway stops then, rather
   * than go on acknowledging events into a file it cannot trust. The call that met it still
   * throws StoreUnavailableError.
   */
  onCorrupt?: (reason: string) => void;
}

/** The SQLite store, with counters for tests and diagnostics. */
export interface SqliteStateStore extends StateStore {
  /** Group-commit counters: `commits` transactions holding `operations` writes. */
  stats(): GroupCommitStats;
}

/** Longest a prune batch waits for the checkpoint of the one before, in ms. */
const PRUNE_CHECKPOINT_WAIT_MS = 2000;

/**
 * Opens the state database (`state/gateway.db`), creating its folder (mode 0700) and tables.
 *
 * Durability: the database is in WAL mode. With `synchronous: "NORMAL"` (default) a committed
 * event survives a crash of the gateway process (kill -9) but not necessarily a power loss or
 * an OS crash; `synchronous: "FULL"` survives those too, at the cost of one fsync per batch.
 * @param path the database file (`:memory:` for a throwaway store)
 * @param options see {@link StateStoreOptions}
 * @returns the store; close it with `close()`
 * @throws StoreUnavailableError when the folder or the file cannot be created or opened
 */
export function openStateStore(path: string, options: StateStoreOptions = {}): SqliteStateStore {
  const database = openDatabase(path, options);
  const core = createStoreCore(database, {
    path,
    ttlMs: (options.idempotencyTtlSeconds ?? 86_400) * 1000,
    clock: options.now ?? Date.now,
    newId: options.newId ?? createIdGenerator(Date.now, cryptoRandom),
    onCorrupt: options.onCorrupt,
  });
  const commits = createStoreCommits(core, options);
  return {
    ...acceptOps(core, commits),
    ...claimOps(core),
    ...readingOps(core),
    replay: replayOp(core),
    async prune(nowMs, pruning) {
      // Batch after batch, a prune outran the checkpoints, and the WAL grew by about what it
      // deleted (767 MB beside an 863 MB database). Each batch waits for the last one's pages
      // to be copied, so the WAL starts over every batch.
      await database.checkpointed(PRUNE_CHECKPOINT_WAIT_MS);
      return core.use(() =>
        prune(database.db, database.transaction, nowMs, {
          retentionDays: pruning.retentionDays,
          maxRows: pruning.maxRows ?? 1000,
        })
      );
    },
    stats: () => commits.stats(),
    async close() {
      if (core.closed) return;
      commits.close();
      core.closed = true;
      await database.close();
    },
  };
}
