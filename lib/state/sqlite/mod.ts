/**
 * The SQLite backend of the state store: one database file (`state/gateway.db`) in WAL mode,
 * opened in-process with `node:sqlite`. This module opens it and puts together the store's parts
 * (accepting events, the worker's claims and outcomes, reading and replaying events for the
 * CLI), with pruning and closing; it implements {@link StateStore} as `lib/state/mod.ts`
 * documents it.
 *
 * Concurrent writes that wait for a commit (`accept`, `recordDirect`, `recordDirectProgress`)
 * share one transaction (group commit), which is what makes a durable ingest path fast. WAL
 * checkpoints run on a thread of their own, off the event loop.
 *
 * Durability: with `synchronous: "NORMAL"` (the default) a committed event survives a crash of
 * the process (kill -9), but the last commits may be lost on a power loss or an OS crash;
 * `synchronous: "FULL"` survives those too, at one fsync per group commit.
 *
 * @module
 */
import { type DatabaseOptions, openDatabase } from "./_database.ts";
import type { GroupCommitStats } from "./_group_commit.ts";
import { prune } from "./_maintenance.ts";
import { acceptOps } from "./_store_accept.ts";
import { coalesceOps } from "./_store_coalesce.ts";
import { claimOps } from "./_store_claims.ts";
import { createStoreCommits } from "./_store_commits.ts";
import { createStoreCore } from "./_store_core.ts";
import { readingOps } from "./_store_reading.ts";
import { replayOp } from "./_store_replay.ts";
import { forgetTurns, sessionOps } from "./_store_sessions.ts";
import {
  createIdGenerator,
  cryptoRandom,
  type StateStore,
  type StateStoreOptions,
} from "../mod.ts";

export { corruptionAdvice } from "./_corruption.ts";
export { SCHEMA_VERSION } from "./_schema.ts";
export type { DatabaseOptions, GroupCommitStats };

/** Options of {@link openStateStore}: every backend's, and SQLite's own. */
export interface SqliteStoreOptions extends StateStoreOptions, DatabaseOptions {
  /** A batch is committed at once when it holds this many writes. @default {512} */
  maxBatch?: number;
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
 * Opens the state database, creating its folder (mode 0700) and tables, or upgrading the tables
 * of a database an older version wrote.
 * @param path the database file (`:memory:` for a throwaway store)
 * @param options see {@link SqliteStoreOptions}
 * @returns the store; close it with `close()`
 * @throws StoreUnavailableError when the folder or the file cannot be created or opened, the
 *   file is emptied beside a log of writes, or a newer version wrote it
 * @example The gateway's store, and a command's
 * ```ts
 * const store = openStateStore(paths.stateDb, {
 *   idempotencyTtlSeconds: 86_400,
 *   onCorrupt: (reason) => stop(reason),
 * });
 * // A short-lived command needs no checkpoint thread.
 * const forCli = openStateStore(paths.stateDb, { backgroundCheckpoints: false });
 * ```
 */
export function openStateStore(path: string, options: SqliteStoreOptions = {}): SqliteStateStore {
  const database = openDatabase(path, options);
  const core = createStoreCore(database, {
    path,
    ttlMs: (options.idempotencyTtlSeconds ?? 86_400) * 1000,
    clock: options.now ?? Date.now,
    newId: options.newId ?? createIdGenerator(Date.now, cryptoRandom),
    onCorrupt: options.onCorrupt,
  });
  const commits = createStoreCommits(core, options);
  const sessionTtlMs = (options.sessionTtlSeconds ?? 604_800) * 1000;
  return {
    ...acceptOps(core, commits),
    ...claimOps(core),
    ...readingOps(core),
    ...coalesceOps(core),
    replay: replayOp(core),
    ...sessionOps(core, { ttlMs: sessionTtlMs }),
    async prune(nowMs, pruning) {
      // A prune's batches in a row outran the checkpoints, and the WAL grew by about what they
      // deleted: each batch waits for the last one's pages to be copied, so the WAL starts over
      // every batch.
      await database.checkpointed(PRUNE_CHECKPOINT_WAIT_MS);
      const maxRows = pruning.maxRows ?? 1000;
      return core.use(() => {
        core.transaction(() => forgetTurns(database.db, nowMs - sessionTtlMs, maxRows));
        return prune(database.db, database.transaction, nowMs, {
          retentionDays: pruning.retentionDays,
          maxRows,
        });
      });
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
