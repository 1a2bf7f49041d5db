/**
 * Group commit: writes asked for by concurrent requests are queued and run together in one
 * SQLite transaction, and each caller's promise settles only after that transaction's COMMIT.
 * One fsync (or one WAL append) then serves a whole batch, which is what makes a durable ingest
 * path fast.
 *
 * @module
 */
import { clearImmediate, setImmediate } from "node:timers";
import { errorMessage, StoreUnavailableError } from "../../errors.ts";

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

/** What {@link createGroupCommit} takes. */
export interface GroupCommitOptions {
  /**
   * A batch is committed at once when it reaches this many operations; otherwise it is
   * committed from `setImmediate`, after the event loop has handled the I/O already waiting,
   * so every request read in the same turn shares the transaction without a timer's
   * millisecond of added latency. @default {512}
   */
  maxBatch?: number;
  /**
   * May return a promise the batch waits for (the WAL checkpointer's gate); operations keep
   * queueing meanwhile.
   */
  beforeBatch?: () => Promise<void> | undefined;
  /**
   * After a batch fails, the batches of the next `failFastMs` are refused at once, without
   * being tried: a database locked past its busy timeout would hold each of them, and the event
   * loop, that long again, and a request needing a few turns of the loop would wait many times
   * the timeout for its 503. @default {0}: every batch is tried
   */
  failFastMs?: number;
  /** A monotonic clock, in ms. @default {performance.now} */
  now?: () => number;
}

/**
 * Creates a group-commit queue around a transaction runner.
 * @param transaction runs a function between BEGIN and COMMIT (rolling back when it throws)
 * @param options see {@link GroupCommitOptions}
 * @returns the queue
 * @example Two writes of one turn of the event loop, one transaction
 * ```ts
 * const commits = createGroupCommit((run) => database.transaction(run));
 * const [a, b] = await Promise.all([
 *   commits.submit(() => insert(first)),
 *   commits.submit(() => insert(second)),
 * ]); // both resolved after the same COMMIT
 * ```
 */
export function createGroupCommit(
  transaction: (run: () => void) => void,
  options: GroupCommitOptions = {},
): GroupCommit {
  return new GroupCommitQueue(transaction, options);
}

/** See {@link createGroupCommit}. */
class GroupCommitQueue implements GroupCommit {
  readonly #transaction: (run: () => void) => void;
  readonly #options: GroupCommitOptions;
  readonly #maxBatch: number;
  readonly #now: () => number;
  readonly #counters: GroupCommitStats = { commits: 0, operations: 0, failures: 0 };
  readonly #pending: Pending[] = [];
  /** The last failure, and until when batches are refused without being tried. */
  #refused: { until: number; reason: string } | undefined;
  #timer: ReturnType<typeof setImmediate> | undefined;
  #gated = false;
  #closed = false;

  constructor(transaction: (run: () => void) => void, options: GroupCommitOptions) {
    this.#transaction = transaction;
    this.#options = options;
    this.#maxBatch = options.maxBatch ?? 512;
    this.#now = options.now ?? (() => performance.now());
  }

  submit<T>(operation: Operation<T>): Promise<T> {
    if (this.#closed) {
      return Promise.reject(new StoreUnavailableError("The state store is closed"));
    }
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ operation, resolve: resolve as (value: unknown) => void, reject });
      if (this.#pending.length >= this.#maxBatch) this.#run();
      else if (this.#timer === undefined) this.#timer = setImmediate(() => this.#run());
    });
  }

  flush(): void {
    if (this.#timer !== undefined) clearImmediate(this.#timer);
    this.#timer = undefined;
    if (this.#refused !== undefined && this.#now() < this.#refused.until) {
      return this.#refuse(this.#pending.splice(0), this.#refused.reason);
    }
    while (this.#pending.length > 0) this.#commit(this.#pending.splice(0, this.#maxBatch));
  }

  close(): void {
    this.flush();
    this.#closed = true;
  }

  stats(): GroupCommitStats {
    return { ...this.#counters };
  }

  /** Flushes the pending batch, once the `beforeBatch` gate, if any, is open. */
  #run(): void {
    this.#timer = undefined;
    if (this.#pending.length === 0 || this.#gated) return;
    const gate = this.#options.beforeBatch?.();
    if (!gate) return this.flush();
    this.#gated = true;
    gate.then(() => {
      this.#gated = false;
      this.flush();
    });
  }

  /** Runs a batch in one transaction: every caller resolves after COMMIT, or all reject. */
  #commit(batch: Pending[]): void {
    const results: unknown[] = [];
    try {
      this.#transaction(() => {
        for (const item of batch) results.push(item.operation());
      });
    } catch (cause) {
      this.#counters.failures += 1;
      const error = new StoreUnavailableError(
        `Cannot persist ${batch.length} event(s): ${errorMessage(cause)}`,
        { cause },
      );
      if (this.#options.failFastMs) {
        this.#refused = {
          until: this.#now() + this.#options.failFastMs,
          reason: errorMessage(cause),
        };
      }
      for (const item of batch) item.reject(error);
      return;
    }
    this.#counters.commits += 1;
    this.#counters.operations += batch.length;
    batch.forEach((item, index) => item.resolve(results[index]));
  }

  /** Rejects a batch without trying it, while the last failure is recent. */
  #refuse(batch: Pending[], reason: string): void {
    const error = new StoreUnavailableError(
      `Cannot persist ${batch.length} event(s): ${reason} (the last batch was ` +
        "refused a moment ago; not tried again yet)",
    );
    for (const item of batch) item.reject(error);
  }
}
