/**
 * The checkpoint thread's side: the code it runs, and what it posts back.
 *
 * @module
 */

/**
 * Runs in the worker. Plain JavaScript loaded from a blob URL, so there is no module file to
 * ship next to a compiled executable; if the thread cannot start anyway, the store falls back
 * to SQLite's own checkpoints.
 */
export const WORKER_SOURCE = `
import { DatabaseSync } from "node:sqlite";
let db;
self.onmessage = ({ data }) => {
  if (data.type === "open") {
    try {
      db = new DatabaseSync(data.path);
      db.exec("PRAGMA synchronous = " + data.synchronous);
      db.exec("PRAGMA cache_size = -256"); // checkpoints copy WAL frames, not cached pages
    } catch (error) {
      self.postMessage({ failed: String(error) });
    }
    return;
  }
  if (data.type === "checkpoint") {
    try {
      const row = db.prepare("PRAGMA wal_checkpoint(PASSIVE)").get();
      self.postMessage({ seq: data.seq, log: row.log, checkpointed: row.checkpointed });
    } catch (error) {
      self.postMessage({ seq: data.seq, error: String(error) });
    }
    return;
  }
  if (data.type === "close") {
    db?.close();
    self.postMessage({ closed: true });
  }
};
`;

/** What the thread posts back: a pass's WAL size and frames copied, or what went wrong. */
export interface Reply {
  /** The commits the pass covers, as the request numbered them. */
  seq?: number;
  /** The WAL's size after the pass, in frames. */
  log?: number;
  /** Frames the pass copied into the database file. */
  checkpointed?: number;
  /** Why the pass failed. */
  error?: string;
  /** The thread's connection is closed: it may be terminated. */
  closed?: boolean;
  /** Why the thread could not open the database. */
  failed?: string;
}
