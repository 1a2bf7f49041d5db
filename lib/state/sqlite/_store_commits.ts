/**
 * The store's group commit: the writes of concurrent accepts share one transaction, which
 * goes only into the files this connection opened, and is refused at once for a while after
 * one failed on a locked database.
 *
 * @module
 */
import { type FileIdentity, fileIdentity, sameFile } from "../../config/fs.ts";
import { StoreUnavailableError } from "../../errors.ts";
import { createGroupCommit, type GroupCommit } from "./_group_commit.ts";
import type { StoreCore } from "./_store_core.ts";

/**
 * Creates the store's group-commit queue.
 * @param core the store
 * @param options `maxBatch`: a batch is committed at once when it holds this many writes
 *   (@default {512}); `busyTimeoutMs`: how long SQLite waits for a lock, in ms (@default {5000})
 * @returns the queue; its batches throw StoreUnavailableError when the database file or its
 *   log was deleted or replaced
 */
export function createStoreCommits(
  core: StoreCore,
  options: { maxBatch?: number; busyTimeoutMs?: number },
): GroupCommit {
  const { path, database } = core;
  const file = path === ":memory:" ? undefined : fileIdentity(path);
  // The write-ahead log this connection writes to, as it was when the store opened (SQLite opens
  // it with the database), else once a commit has written to it; a file system without WAL
  // support has none, and then only the database is checked. (A deleted `-shm` loses nothing:
  // the gateway's watch sees it, and the gateway exits.)
  let log: FileIdentity | undefined = file === undefined ? undefined : fileIdentity(`${path}-wal`);
  return createGroupCommit((run) => {
    // A batch goes only into the files this connection opened. If the database is no longer
    // the file at `path` (deleted, or replaced by a restored backup), nobody will open it again;
    // if its log was deleted, a crash would lose what goes into it. Either way the batch is
    // refused before it is written: its writers get StoreUnavailableError (503, so the senders
    // retry) instead of a 202 for an event that may be gone. Two stats per batch, where the
    // gateway's watch looks once a second.
    if (file !== undefined) {
      for (const [name, ours] of [[path, file], [`${path}-wal`, log]] as const) {
        if (ours !== undefined && !sameFile(fileIdentity(name), ours)) {
          throw new StoreUnavailableError(
            `${name} was deleted or replaced while the store had it open`,
          );
        }
      }
    }
    try {
      database.transaction(run);
    } catch (error) {
      core.noteCorruption(error);
      throw error;
    }
    if (file !== undefined) log ??= fileIdentity(`${path}-wal`);
  }, {
    maxBatch: options.maxBatch,
    beforeBatch: database.beforeBatch,
    // A refused batch held the event loop for the busy timeout: for as long again, batches are
    // refused at once (503), not each held as long, so at most half the loop waits on a lock.
    failFastMs: path === ":memory:" ? 0 : Math.max(0, options.busyTimeoutMs ?? 5000),
  });
}
