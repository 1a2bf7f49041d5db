/**
 * WAL checkpoints on a background thread.
 *
 * SQLite's automatic checkpoint runs inside the COMMIT that crosses 1,000 WAL pages, copying
 * them into the database file and fsyncing it: 20-40 ms during which the event loop (and every
 * request waiting on it) stands still. Here the main connection turns automatic checkpoints
 * off and a worker thread with its own connection runs `PRAGMA wal_checkpoint(PASSIVE)` after
 * commits, concurrently with the main thread (https://sqlite.org/wal.html#ckpt).
 *
 * A passive checkpoint never blocks writers, but the WAL file only starts over from its
 * beginning when a write transaction begins after a checkpoint has copied every frame. Under
 * sustained load that moment may never come, so once the WAL is past `maxWalFrames` the next
 * group commit waits (asynchronously, a few ms at most) for one complete pass before it
 * begins, and the WAL restarts.
 *
 * Passes start at most once per `minIntervalMs` (100 ms), so under load one pass copies the
 * frames of many commits and fsyncs once for them. Once the last pass reported a WAL past half
 * of `maxWalFrames`, they run back to back, and a commit waiting at the limit is never kept
 * waiting for the spacing.
 *
 * @module
 */

/** The checkpointer, as the store drives it. */
export interface Checkpointer {
  /**
   * A write transaction committed: asks for a checkpoint pass, at once when none is running
   * and none began in the last `minIntervalMs` (or the WAL is past half its limit), else when
   * the interval is over.
   */
  afterCommit(): void;
  /**
   * Called before a group commit begins.
   * @returns undefined to go ahead now, or a promise to wait for (the WAL is past its limit and
   *   a complete pass is being made, so the coming BEGIN restarts the WAL)
   */
  beforeCommit(): Promise<void> | undefined;
  /**
   * Waits until a pass has run past every commit so far, however long the WAL (or at most
   * `maxMs`), so that the next write transaction starts the WAL over, unless a reader in
   * another process keeps the pass from copying it all. For bulk writes that can wait
   * (retention's deletes), which would otherwise outrun the passes batch after batch.
   * @param maxMs the longest wait, in ms (a reader in another process may pin the WAL)
   */
  caughtUp(maxMs: number): Promise<void>;
  /** Stops the thread after closing its connection. */
  close(): Promise<void>;
  /**
   * `passes` asked for so far, and `behind`: commits that no pass has yet checkpointed without
   * an error.
   */
  stats(): { passes: number; behind: number };
}

/**
 * Runs in the worker. Plain JavaScript loaded from a blob URL, so there is no module file to
 * ship next to a compiled executable; if the thread cannot start anyway, the store falls back
 * to SQLite's own checkpoints.
 */
const WORKER_SOURCE = `
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

interface Reply {
  seq?: number;
  log?: number;
  checkpointed?: number;
  error?: string;
  closed?: boolean;
  failed?: string;
}

/**
 * Starts the checkpoint thread for a database file in WAL mode.
 * @param path the database file
 * @param options `synchronous` as on the main connection; `maxWalFrames`: WAL size (in pages)
 *   past which a commit waits for a complete pass (@default {4096}, 16 MiB of 4 KiB pages;
 *   a larger WAL made those waits, and the p99 latency of ingest, longer);
 *   `maxWaitMs`: longest such wait, e.g. while a reader in another process pins the WAL
 *   (@default {50}); `minIntervalMs`: least time between the starts of two passes while the
 *   last pass reported a WAL under half of `maxWalFrames`, so one pass copies the frames of
 *   many commits and fsyncs once for them (@default {100});
 *   `now`: the clock that spacing is measured with, in ms (@default {performance.now});
 *   `onFailure`: called once if the thread dies, so the caller can turn SQLite's automatic
 *   checkpoints back on
 * @returns the checkpointer, or undefined when a worker thread cannot be started (the caller
 *   then keeps SQLite's automatic checkpoints)
 */
export function startCheckpointer(
  path: string,
  options: {
    synchronous: string;
    maxWalFrames?: number;
    maxWaitMs?: number;
    minIntervalMs?: number;
    now?: () => number;
    onFailure: (reason: string) => void;
  },
): Checkpointer | undefined {
  let worker: Worker;
  try {
    const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "text/javascript" }));
    worker = new Worker(url, { type: "module" });
    URL.revokeObjectURL(url);
  } catch {
    return undefined;
  }
  const maxWalFrames = options.maxWalFrames ?? 4_096;
  const maxWaitMs = options.maxWaitMs ?? 50;
  let commits = 0; // commits so far
  let sent = 0; // commits covered by the last pass asked for
  let inFlight = false;
  let walFrames = 0; // WAL size in frames, as of the last pass
  let heldAtFrames = 0; // WAL size when a commit was last held; 0 once the WAL is back under
  let waiters: { covers: number; resolve: () => void }[] = [];
  let onClosed: (() => void) | undefined;
  let failed = false;
  let closed = false;
  const minIntervalMs = options.minIntervalMs ?? 100;
  const now = options.now ?? (() => performance.now());
  let lastAskMs = -Infinity;
  let passes = 0;
  let covered = 0; // commits covered by the last finished pass
  let passTimer: ReturnType<typeof setTimeout> | undefined;

  function fail(reason: string): void {
    if (failed) return;
    failed = true;
    for (const waiter of waiters) waiter.resolve();
    waiters = [];
    options.onFailure(reason);
  }

  /**
   * Asks the thread for a pass unless one is running. `spaced`: not before `minIntervalMs`
   * after the last one began (a timer asks then), unless the last pass reported a WAL past
   * half of `maxWalFrames`. Passes are only asked for after commits, so even back to back
   * they come at most once per commit, and a pass with nothing to copy is cheap.
   */
  function ask(spaced: boolean): void {
    if (inFlight || failed || closed) return;
    const waitMs = lastAskMs + minIntervalMs - now();
    // Past half the WAL limit passes run back to back, so that a commit held at the limit
    // finds little left to copy (with spaced passes it waited about 8 ms, at most 18, four
    // times a second under sustained load).
    if (spaced && waitMs > 0 && walFrames < maxWalFrames / 2) {
      if (passTimer === undefined) {
        passTimer = setTimeout(() => {
          passTimer = undefined;
          ask(false);
        }, waitMs);
        Deno.unrefTimer(passTimer);
      }
      return;
    }
    clearTimeout(passTimer);
    passTimer = undefined;
    inFlight = true;
    sent = commits;
    passes += 1;
    lastAskMs = now();
    worker.postMessage({ type: "checkpoint", seq: sent });
  }

  /** Asks for a pass now; resolves once one has covered `covers` commits, or after `maxMs`. */
  function passCovering(covers: number, maxMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, maxMs);
      waiters.push({
        covers,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
      ask(false);
    });
  }

  worker.onmessage = ({ data }: MessageEvent<Reply>) => {
    if (data.closed) return onClosed?.();
    if (closed) return;
    if (data.failed !== undefined) return fail(data.failed);
    inFlight = false;
    walFrames = data.log ?? walFrames;
    if (walFrames < maxWalFrames) heldAtFrames = 0;
    const seq = data.seq ?? 0;
    if (data.error === undefined) covered = Math.max(covered, seq);
    // A waiter is released by the pass that covers its commits, even one that failed: it waits
    // for the WAL to restart, which a failed pass will not bring about anyway.
    waiters = waiters.filter((waiter) => {
      if (waiter.covers > seq) return true;
      waiter.resolve();
      return false;
    });
    // A commit waiting at the WAL limit needs the next pass now, not after the spacing.
    if (commits > sent) ask(waiters.length === 0);
  };
  worker.onerror = (event) => {
    event.preventDefault();
    fail(event.message);
  };
  worker.postMessage({ type: "open", path, synchronous: options.synchronous });

  return {
    afterCommit() {
      commits += 1;
      ask(true);
    },
    beforeCommit() {
      if (failed || walFrames < maxWalFrames) return undefined;
      // One wait per crossing: when the WAL cannot restart (a reader in another process holds
      // a snapshot), commits go ahead until it has grown by another maxWalFrames.
      if (heldAtFrames > 0 && walFrames < heldAtFrames + maxWalFrames) return undefined;
      heldAtFrames = walFrames;
      return passCovering(commits, maxWaitMs);
    },
    caughtUp(maxMs) {
      if (failed || closed || covered >= commits) return Promise.resolve();
      return passCovering(commits, maxMs);
    },
    stats: () => ({ passes, behind: commits - covered }),
    close() {
      closed = true;
      clearTimeout(passTimer);
      passTimer = undefined;
      for (const waiter of waiters) waiter.resolve();
      waiters = [];
      return new Promise<void>((resolve) => {
        const timer = setTimeout(finish, 1000);
        function finish() {
          clearTimeout(timer);
          worker.terminate();
          resolve();
        }
        onClosed = finish;
        worker.postMessage({ type: "close" });
      });
    },
  };
}
