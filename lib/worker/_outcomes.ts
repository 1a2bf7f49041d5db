/**
 * Recording the worker's outcomes when the state store refuses them (a locked or full
 * database): the write is held, the event stays `running`, and the write is tried again later
 * rather than the event being left `running` until a restart.
 *
 * @module
 */
import { StoreUnavailableError } from "../errors.ts";
import { describe } from "./_core.ts";
import type { WorkerDeps } from "./mod.ts";

/** How long the worker leaves the store alone after it refused a write, in ms. */
export const STORE_REFUSED_RETRY_MS = 5000;

/** The outcomes of one worker that the store has not taken yet. */
export interface HeldOutcomes {
  /**
   * The store refused a write: the worker leaves it alone (holds every outcome) until the
   * timer that the `rest` callback of {@link createHeldOutcomes} starts ends this.
   */
  resting: boolean;
  /**
   * Writes an event's outcome; when the store fails, keeps the write for the next pass of the
   * loop instead of leaving the event `running` until a restart.
   * @param eventId the event the outcome is for
   * @param write the write; held when the store rests or throws {@link StoreUnavailableError}
   * @throws whatever else `write` throws
   */
  record(eventId: string, write: () => void): void;
  /**
   * Writes what an attempt has to write before its outcome, unless the store rests; when it
   * refuses, the store rests and the caller keeps the write for the outcome's.
   * @param write the write
   * @throws whatever `write` throws but {@link StoreUnavailableError}
   */
  writeNow(write: () => void): void;
  /**
   * Tries the held writes in order. The first one the store still refuses ends the pass (each
   * refusal may have waited the busy timeout) and goes to the back of the line, so a write that
   * keeps failing does not hold up the others.
   * @returns false when the store refused one
   */
  recordHeld(): boolean;
  /** @returns the ids of the events whose outcomes are held, oldest first */
  heldIds(): string[];
}

/**
 * Creates the held outcomes of one worker, none at first.
 * @param log the worker's log
 * @param rest called when the store refused a write: sets `resting` and starts the rest
 * @returns the held outcomes
 */
export function createHeldOutcomes(log: WorkerDeps["log"], rest: () => void): HeldOutcomes {
  /**
   * Outcomes that could not be written (a locked or full database), by event id, oldest first:
   * their events stay `running` in the store, where nothing claims them, so the writes are
   * tried again on every pass of the loop (every `pollIntervalMs`, and after each event ends;
   * {@link STORE_REFUSED_RETRY_MS} after a refusal) while the worker runs. A delivered message
   * is thus recorded as delivered rather than sent again by a retry. What is still unwritten
   * when the worker stops runs again at the next start (at least once).
   */
  const unrecorded = new Map<string, () => void>();

  function record(eventId: string, write: () => void): void {
    if (outcomes.resting) {
      unrecorded.set(eventId, write);
      log("warn", "outcome held while the state database refuses writes", { event_id: eventId });
      return;
    }
    try {
      write();
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      unrecorded.set(eventId, write);
      log("error", "cannot record the outcome yet; trying again", {
        event_id: eventId,
        error: describe(error),
      });
      rest();
    }
  }

  function writeNow(write: () => void): void {
    if (outcomes.resting) return;
    try {
      write();
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      rest();
    }
  }

  function recordHeldOutcomes(): boolean {
    for (const [eventId, write] of [...unrecorded]) {
      try {
        write();
        unrecorded.delete(eventId);
        log("info", "outcome recorded", { event_id: eventId });
      } catch (error) {
        unrecorded.delete(eventId);
        if (error instanceof StoreUnavailableError) {
          unrecorded.set(eventId, write);
          return false;
        }
        log("error", "cannot record the outcome", { event_id: eventId, error: describe(error) });
      }
    }
    return true;
  }

  const outcomes: HeldOutcomes = {
    resting: false,
    record,
    writeNow,
    recordHeld: recordHeldOutcomes,
    heldIds: () => [...unrecorded.keys()],
  };
  return outcomes;
}
