/**
 * Writes the state store refused (a locked or full database), held and tried again: the
 * outcomes of the worker's attempts, and the records of direct deliveries. A held outcome's
 * event stays `running`, where nothing claims it; a held direct record makes its delivery id a
 * duplicate all the same, within the idempotency window. What is still held when the gateway
 * stops is lost: the worker's events run again at the next start, and a direct message is sent
 * again only if its sender retries (at least once, either way).
 *
 * @module
 */
import { ConflictError, StoreUnavailableError } from "../errors.ts";
import { describe } from "./_core.ts";
import type { WorkerDeps } from "./mod.ts";

/** How long the worker leaves the store alone after it refused a write, in ms. */
export const STORE_REFUSED_RETRY_MS = 5000;

/** The most writes held at once; past it the oldest is dropped (a direct record keeps its payload). */
export const MAX_HELD_WRITES = 1000;

/** A write to the state store: the worker's outcome, or a direct record. */
export type StoreWrite = () => Promise<unknown>;

/** What a held write is about, besides its key. */
export interface HeldWriteInfo {
  /**
   * A delivered direct message: its delivery id is a duplicate while the write is held, within
   * the idempotency window counted from this time (ms since the epoch).
   */
  deliveredAtMs?: number;
}

/** The writes of one worker that the store has not taken yet. */
export interface HeldOutcomes {
  /**
   * The store refused a write: the worker leaves it alone (holds every outcome) until the
   * timer that the `rest` callback of {@link createHeldOutcomes} starts ends this.
   */
  resting: boolean;
  /**
   * Writes an outcome; when the store rests or refuses, holds it for the next pass of the loop
   * instead of leaving the event `running` until a restart. A write refused with ConflictError
   * (the claim's lease ended and another gateway runs the event: docs/scaling.md) is dropped
   * with a log line, never held.
   * @param key what the write is for: an event id, or a direct delivery's key; a later write
   *   held under the same key replaces the earlier one
   * @param write the write
   * @param info what else the held write says (a delivered direct message)
   * @returns `written`, `held` or `dropped` (lease lost); never rejects for a refused write
   * @throws whatever else `write` throws
   */
  record(key: string, write: StoreWrite, info?: HeldWriteInfo): Promise<WriteResult>;
  /**
   * Like {@link record}, but tries the write even while the store rests, and holds it whatever
   * the failure: for the record of a direct message whose sender already has its answer.
   * @returns true once written, false when held
   */
  recordNow(key: string, write: StoreWrite, info?: HeldWriteInfo): Promise<boolean>;
  /**
   * Writes what an attempt has to write before its outcome, unless the store rests; when it
   * refuses, the store rests and the caller keeps the write for the outcome's.
   * @returns undefined when the write was not made (resting, or refused)
   * @throws whatever `write` throws but {@link StoreUnavailableError} (ConflictError: the lease
   *   was lost, and the attempt must end)
   */
  writeNow<T>(write: () => Promise<T>): Promise<T | undefined>;
  /**
   * Tries the held writes in order. The first one the store still refuses ends the pass (each
   * refusal may have waited the busy timeout) and goes to the back of the line, so a write that
   * keeps failing does not hold up the others. One pass at a time: a call during a pass gets
   * that pass's result, and writes held while it runs are written by it.
   * @returns false when the store refused one
   */
  recordHeld(): Promise<boolean>;
  /**
   * Whether a delivered direct message with this delivery key waits to be recorded, delivered
   * less than `ttlMs` before `nowMs`.
   */
  delivered(key: string, nowMs: number, ttlMs: number): boolean;
  /** @returns the keys of the held writes, oldest first */
  heldKeys(): string[];
}

/** What became of an outcome's write. */
export type WriteResult = "written" | "held" | "dropped";

interface Held extends HeldWriteInfo {
  write: StoreWrite;
  /** Kept and tried again whatever the failure (a direct record: its sender has its answer). */
  keepOnAnyError?: boolean;
}

/**
 * Creates the held writes of one worker, none at first.
 * @param log the worker's log
 * @param rest called when the store refused a write: sets `resting` and starts the rest
 * @returns the held writes
 */
export function createHeldOutcomes(log: WorkerDeps["log"], rest: () => void): HeldOutcomes {
  return new HeldWrites(log, rest);
}

/** {@link HeldOutcomes}, keyed in the order they were held. */
class HeldWrites implements HeldOutcomes {
  resting = false;
  readonly #held = new Map<string, Held>();
  #pass: Promise<boolean> | undefined;

  constructor(readonly log: WorkerDeps["log"], readonly rest: () => void) {}

  async record(key: string, write: StoreWrite, info: HeldWriteInfo = {}): Promise<WriteResult> {
    const entry = { write, ...info };
    if (this.resting) {
      this.#hold(key, entry);
      this.log("warn", "outcome held while the state database refuses writes", keyField(key));
      return "held";
    }
    try {
      await write();
      return "written";
    } catch (error) {
      if (error instanceof ConflictError) {
        leaseLost(this.log, key, error);
        return "dropped";
      }
      this.#refused(key, entry, error);
      return "held";
    }
  }

  async recordNow(key: string, write: StoreWrite, info: HeldWriteInfo = {}): Promise<boolean> {
    try {
      await write();
      return true;
    } catch (error) {
      // The sender already has its answer: whatever the failure, the record is kept and tried
      // again rather than lost.
      const refusal = error instanceof StoreUnavailableError
        ? error
        : new StoreUnavailableError(describe(error), { cause: error });
      this.#refused(key, { write, ...info, keepOnAnyError: true }, refusal);
      return false;
    }
  }

  async writeNow<T>(write: () => Promise<T>): Promise<T | undefined> {
    if (this.resting) return undefined;
    try {
      return await write();
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      this.rest();
      return undefined;
    }
  }

  recordHeld(): Promise<boolean> {
    if (this.#pass !== undefined) return this.#pass;
    // Writes held while a pass ran are written by the same pass.
    const untilEmpty = async (): Promise<boolean> => {
      let written = true;
      while (written && this.#held.size > 0) written = await writeHeld(this.#held, this.log);
      return written;
    };
    this.#pass = untilEmpty().finally(() => this.#pass = undefined);
    return this.#pass;
  }

  delivered(key: string, nowMs: number, ttlMs: number): boolean {
    const at = this.#held.get(key)?.deliveredAtMs;
    return at !== undefined && nowMs - at < ttlMs;
  }

  heldKeys(): string[] {
    return [...this.#held.keys()].map(printable);
  }

  #hold(key: string, entry: Held): void {
    this.#held.delete(key);
    this.#held.set(key, entry);
    if (this.#held.size <= MAX_HELD_WRITES) return;
    const [oldest] = this.#held.keys();
    this.#held.delete(oldest);
    this.log("error", "a held write was dropped: too many held", { key: printable(oldest) });
  }

  #refused(key: string, entry: Held, error: unknown): void {
    if (!(error instanceof StoreUnavailableError)) throw error;
    this.#hold(key, entry);
    this.log("error", "cannot record the outcome yet; trying again", {
      ...keyField(key),
      error: describe(error),
    });
    this.rest();
  }
}

/**
 * One pass over the held writes, in order, one at a time: a later write of an event never
 * overtakes an earlier one.
 * @returns false when the store refused one
 */
async function writeHeld(held: Map<string, Held>, log: WorkerDeps["log"]): Promise<boolean> {
  for (const [key, entry] of [...held]) {
    let error: unknown;
    try {
      await entry.write();
    } catch (thrown) {
      error = thrown ?? new Error("the write failed");
    }
    // Only this entry: a newer one held under the same key meanwhile stays.
    if (held.get(key) === entry) held.delete(key);
    if (error === undefined) {
      log("info", "outcome recorded", keyField(key));
    } else if (error instanceof ConflictError && !entry.keepOnAnyError) {
      leaseLost(log, key, error);
    } else if (error instanceof StoreUnavailableError || entry.keepOnAnyError) {
      if (!held.has(key)) held.set(key, entry);
      return false;
    } else {
      log("error", "cannot record the outcome", { ...keyField(key), error: describe(error) });
    }
  }
  return true;
}

/**
 * An outcome the store refused because the claim's lease ended: another gateway claimed the
 * event and runs it again, so this run's outcome is dropped rather than retried.
 */
function leaseLost(log: WorkerDeps["log"], key: string, error: ConflictError): void {
  log("warn", "outcome dropped: the lease on the event was lost to another gateway", {
    ...keyField(key),
    error: describe(error),
  });
}

/** The log field naming a held write: `event_id` for an event, the delivery for a direct record. */
function keyField(key: string): Record<string, string> {
  return key.includes("\u0000") ? { delivery: printable(key) } : { event_id: key };
}

/** A key as it can be logged: a direct delivery's key is `<subscription>\0<delivery id>`. */
function printable(key: string): string {
  return key.replace("\u0000", " ");
}
