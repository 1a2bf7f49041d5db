/**
 * WAL checkpoints on a background thread.
 *
 * SQLite's automatic checkpoint runs inside the COMMIT that crosses 1,000 WAL pages, copying
 * them into the database file and fsyncing it, while the event loop (and every request waiting
 * on it) stands still. Here the main connection turns automatic checkpoints off and a worker
 * thread with its own connection runs `PRAGMA wal_checkpoint(PASSIVE)` after commits,
 * concurrently with the main thread (https://sqlite.org/wal.html#ckpt).
 *
 * A passive checkpoint never blocks writers, but the WAL file only starts over from its
 * beginning when a write transaction begins after a checkpoint has copied every frame. Under
 * sustained load that moment may never come, so once the WAL is past `maxWalFrames` the next
 * group commit waits (asynchronously, a few ms at most) for one complete pass before it
 * begins, and the WAL restarts.
 *
 * Passes start at most once per `minIntervalMs`, so under load one pass copies the frames of
 * many commits and fsyncs once for them. Once the last pass reported a WAL past half of
 * `maxWalFrames`, they run back to back, and a commit waiting at the limit is never kept waiting
 * for the spacing.
 *
 * @module
 */
import { type Reply, WORKER_SOURCE } from "./_checkpoint_thread.ts";

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

/** What {@link startCheckpointer} takes. */
export interface CheckpointerOptions {
  /** `synchronous` as on the main connection: `NORMAL` or `FULL`. */
  synchronous: string;
  /**
   * WAL size, in pages, past which a commit waits for a complete pass (4096: 16 MiB of 4 KiB
   * pages; a larger WAL makes those waits, and ingest's tail latency, longer). @default {4096}
   */
  maxWalFrames?: number;
  /** Longest such wait, in ms, e.g. while a reader in another process pins the WAL. @default {50} */
  maxWaitMs?: number;
  /**
   * Least time between the starts of two passes while the last pass reported a WAL under half
   * of `maxWalFrames`, in ms, so one pass copies the frames of many commits and fsyncs once for
   * them. @default {100}
   */
  minIntervalMs?: number;
  /** The clock that spacing is measured with, in ms. @default {performance.now} */
  now?: () => number;
  /** Called once if the thread dies, so the caller can turn SQLite's checkpoints back on. */
  onFailure: (reason: string) => void;
}

/**
 * Starts the checkpoint thread for a database file in WAL mode.
 * @param path the database file
 * @param options see {@link CheckpointerOptions}
 * @returns the checkpointer, or undefined when a worker thread cannot be started (the caller
 *   then keeps SQLite's automatic checkpoints)
 * @example Around the commits of a connection whose automatic checkpoints are off
 * ```ts
 * const checkpointer = startCheckpointer(path, { synchronous: "NORMAL", onFailure });
 * await checkpointer?.beforeCommit(); // at the WAL's limit: a complete pass first
 * db.exec("BEGIN IMMEDIATE"); ...; db.exec("COMMIT");
 * checkpointer?.afterCommit();
 * ```
 */
export function startCheckpointer(
  path: string,
  options: CheckpointerOptions,
): Checkpointer | undefined {
  let worker: Worker;
  try {
    const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "text/javascript" }));
    worker = new Worker(url, { type: "module" });
    URL.revokeObjectURL(url);
  } catch {
    return undefined;
  }
  const checkpointer = new ThreadCheckpointer(worker, {
    maxWalFrames: options.maxWalFrames ?? 4_096,
    maxWaitMs: options.maxWaitMs ?? 50,
    minIntervalMs: options.minIntervalMs ?? 100,
    now: options.now ?? (() => performance.now()),
    onFailure: options.onFailure,
  });
  worker.postMessage({ type: "open", path, synchronous: options.synchronous });
  return checkpointer;
}

/** A waiter for a pass: released once a pass has covered `covers` commits. */
interface Waiter {
  covers: number;
  resolve: () => void;
}

/** The checkpointer of one thread, its options resolved. */
class ThreadCheckpointer implements Checkpointer {
  readonly #worker: Worker;
  readonly #options: Required<Omit<CheckpointerOptions, "synchronous">>;
  /** Commits so far. */
  #commits = 0;
  /** Commits covered by the last pass asked for. */
  #sent = 0;
  /** Commits covered by the last finished pass. */
  #covered = 0;
  #passes = 0;
  #inFlight = false;
  /** WAL size in frames, as of the last pass. */
  #walFrames = 0;
  /** WAL size when a commit was last held; 0 once the WAL is back under the limit. */
  #heldAtFrames = 0;
  #waiters: Waiter[] = [];
  #lastAskMs = -Infinity;
  #passTimer: ReturnType<typeof setTimeout> | undefined;
  #onClosed: (() => void) | undefined;
  #failed = false;
  #closed = false;

  constructor(worker: Worker, options: Required<Omit<CheckpointerOptions, "synchronous">>) {
    this.#worker = worker;
    this.#options = options;
    worker.onmessage = ({ data }: MessageEvent<Reply>) => this.#onReply(data);
    worker.onerror = (event) => {
      event.preventDefault();
      this.#fail(event.message);
    };
  }

  afterCommit(): void {
    this.#commits += 1;
    this.#ask(true);
  }

  beforeCommit(): Promise<void> | undefined {
    const { maxWalFrames, maxWaitMs } = this.#options;
    if (this.#failed || this.#walFrames < maxWalFrames) return undefined;
    // One wait per crossing: when the WAL cannot restart (a reader in another process holds
    // a snapshot), commits go ahead until it has grown by another maxWalFrames.
    if (this.#heldAtFrames > 0 && this.#walFrames < this.#heldAtFrames + maxWalFrames) {
      return undefined;
    }
    this.#heldAtFrames = this.#walFrames;
    return this.#passCovering(this.#commits, maxWaitMs);
  }

  caughtUp(maxMs: number): Promise<void> {
    if (this.#failed || this.#closed || this.#covered >= this.#commits) return Promise.resolve();
    return this.#passCovering(this.#commits, maxMs);
  }

  stats(): { passes: number; behind: number } {
    return { passes: this.#passes, behind: this.#commits - this.#covered };
  }

  close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#passTimer);
    this.#passTimer = undefined;
    this.#releaseAll();
    return new Promise<void>((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        this.#worker.terminate();
        resolve();
      };
      const timer = setTimeout(finish, 1000);
      this.#onClosed = finish;
      this.#worker.postMessage({ type: "close" });
    });
  }

  /** The thread answered: a pass finished (or failed), it closed, or it could not open. */
  #onReply(data: Reply): void {
    if (data.closed) return this.#onClosed?.();
    if (this.#closed) return;
    if (data.failed !== undefined) return this.#fail(data.failed);
    this.#inFlight = false;
    this.#walFrames = data.log ?? this.#walFrames;
    if (this.#walFrames < this.#options.maxWalFrames) this.#heldAtFrames = 0;
    const seq = data.seq ?? 0;
    if (data.error === undefined) this.#covered = Math.max(this.#covered, seq);
    // A waiter is released by the pass that covers its commits, even one that failed: it waits
    // for the WAL to restart, which a failed pass will not bring about anyway.
    this.#waiters = this.#waiters.filter((waiter) => {
      if (waiter.covers > seq) return true;
      waiter.resolve();
      return false;
    });
    // A commit waiting at the WAL limit needs the next pass now, not after the spacing.
    if (this.#commits > this.#sent) this.#ask(this.#waiters.length === 0);
  }

  /**
   * Asks the thread for a pass unless one is running. `spaced`: not before `minIntervalMs`
   * after the last one began (a timer asks then), unless the last pass reported a WAL past
   * half of `maxWalFrames`. Passes are only asked for after commits, so even back to back
   * they come at most once per commit, and a pass with nothing to copy is cheap.
   */
  #ask(spaced: boolean): void {
    if (this.#inFlight || this.#failed || this.#closed) return;
    const { minIntervalMs, maxWalFrames, now } = this.#options;
    const waitMs = this.#lastAskMs + minIntervalMs - now();
    // Past half the WAL limit passes run back to back, so that a commit held at the limit
    // finds little left to copy.
    if (spaced && waitMs > 0 && this.#walFrames < maxWalFrames / 2) return this.#askIn(waitMs);
    clearTimeout(this.#passTimer);
    this.#passTimer = undefined;
    this.#inFlight = true;
    this.#sent = this.#commits;
    this.#passes += 1;
    this.#lastAskMs = now();
    this.#worker.postMessage({ type: "checkpoint", seq: this.#sent });
  }

  /** Asks for a pass in `waitMs`, unless a timer for one is set already. */
  #askIn(waitMs: number): void {
    if (this.#passTimer !== undefined) return;
    this.#passTimer = setTimeout(() => {
      this.#passTimer = undefined;
      this.#ask(false);
    }, waitMs);
    Deno.unrefTimer(this.#passTimer);
  }

  /** Asks for a pass now; resolves once one has covered `covers` commits, or after `maxMs`. */
  #passCovering(covers: number, maxMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, maxMs);
      this.#waiters.push({
        covers,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
      this.#ask(false);
    });
  }

  /** The thread died or could not open the file: waiters go, the caller is told once. */
  #fail(reason: string): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#releaseAll();
    this.#options.onFailure(reason);
  }

  #releaseAll(): void {
    for (const waiter of this.#waiters) waiter.resolve();
    this.#waiters = [];
  }
}
