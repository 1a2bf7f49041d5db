/**
 * Group commit: writes asked for by concurrent requests are queued and run together in one
 * SQLite transaction, and each caller's promise settles only after that transaction's COMMIT.
 * One fsync (or one WAL append) then serves a whole batch, which is what lets a durable ingest
 * path answer thousands of requests per second.
 *
 * @module
 */
import { clearImmediate, setImmediate } from "node:timers";
import { errorMessage } from "../../errors.ts";
import { StoreUnavailableError } from "../../errors.ts";

/** One write, run inside the batch transaction; its return value resolves the caller. */
export type Operation<T> = () => T;

interface Pending {
  operation: Operation<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** Counters for tests and diagnostics. */
export interface GroupCommitStats {
  /** Transactions committed. */
  commits: number;
  /** Operations committed (over all transactions). */
  operations: number;
  /** Transactions rolled back because a statement or the COMMIT failed. */
  failures: number;
}

/** The queue: submit operations, flush them, close it. */
export interface GroupCommit {
  /**
   * Queues an operation for the next batch.
   * @param operation runs inside the transaction; must only do synchronous database work
   * @returns its result, once the batch has committed
   * @throws StoreUnavailableError when the batch could not be committed or the queue is closed
   */
  submit<T>(operation: Operation<T>): Promise<T>;
  /** Commits what is pending now, without waiting for `beforeBatch` (no-op when empty). */
  flush(): void;
  /** Flushes what is pending, then refuses new operations. */
  close(): void;
  /** Counters since creation. */
  stats(): GroupCommitStats;
}

/**
 * Creates a group-commit queue around a transaction runner.
 * @param transaction runs a function between BEGIN and COMMIT (rolling back when it throws)
 * @param options `maxBatch`: a batch is committed at once when it reaches this many operations
 *   (@default {512}); otherwise it is committed from `setImmediate`, after the event loop has
 *   handled the I/O already waiting, so every request read in the same turn shares the
 *   transaction without a timer's millisecond of added latency. `beforeBatch`: may return a
 *   promise the batch waits for (the WAL checkpointer's gate); operations keep queueing
 *   meanwhile. `failFastMs`: after a batch fails, the batches of the next `failFastMs` are
 *   refused at once, without being tried (@default {0}: every batch is tried): a database
 *   locked past its busy timeout would hold each of them, and the event loop, that long again,
 *   so that a request that needs a few turns of the loop waited many seconds for its 503.
 *   `now`: a monotonic clock in ms (@default {performance.now})
 * @returns the queue
 */
export function createGroupCommit(
  transaction: (run: () => void) => void,
  options: {
    maxBatch?: number;
    beforeBatch?: () => Promise<void> | undefined;
    failFastMs?: number;
    now?: () => number;
  } = {},
): GroupCommit {
  const maxBatch = options.maxBatch ?? 512;
  const now = options.now ?? (() => performance.now());
  /** The last failure, and until when batches are refused without being tried. */
  let refused: { until: number; reason: string } | undefined;
  const counters: GroupCommitStats = { commits: 0, operations: 0, failures: 0 };
  const pending: Pending[] = [];
  let timer: ReturnType<typeof setImmediate> | undefined;
  let gated = false;
  let closed = false;

  function commit(batch: Pending[]): void {
    const results: unknown[] = [];
    try {
      transaction(() => {
        for (const item of batch) results.push(item.operation());
      });
    } catch (cause) {
      counters.failures += 1;
      const error = new StoreUnavailableError(
        `Cannot persist ${batch.length} event(s): ${errorMessage(cause)}`,
        { cause },
      );
      if (options.failFastMs) {
        refused = { until: now() + options.failFastMs, reason: errorMessage(cause) };
      }
      for (const item of batch) item.reject(error);
      return;
    }
    counters.commits += 1;
    counters.operations += batch.length;
    batch.forEach((item, index) => item.resolve(results[index]));
  }

  function flush(): void {
    if (timer !== undefined) clearImmediate(timer);
    timer = undefined;
    if (refused !== undefined && now() < refused.until) {
      const batch = pending.splice(0);
      const error = new StoreUnavailableError(
        `Cannot persist ${batch.length} event(s): ${refused.reason} (the last batch was ` +
          "refused a moment ago; not tried again yet)",
      );
      for (const item of batch) item.reject(error);
      return;
    }
    while (pending.length > 0) commit(pending.splice(0, maxBatch));
  }

  function run(): void {
    timer = undefined;
    if (pending.length === 0 || gated) return;
    const gate = options.beforeBatch?.();
    if (!gate) return flush();
    gated = true;
    gate.then(() => {
      gated = false;
      flush();
    });
  }

  return {
    submit<T>(operation: Operation<T>): Promise<T> {
      if (closed) return Promise.reject(new StoreUnavailableError("The state store is closed"));
      return new Promise<T>((resolve, reject) => {
        pending.push({ operation, resolve: resolve as (value: unknown) => void, reject });
        if (pending.length >= maxBatch) run();
        else if (timer === undefined) timer = setImmediate(run);
      });
    },
    flush,
    close() {
      flush();
      closed = true;
    },
    stats: () => ({ ...counters }),
  };
}
