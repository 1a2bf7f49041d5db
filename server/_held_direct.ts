/**
 * Direct deliveries whose outcome the state database refused to record (locked by another
 * process, full). The message went out, so the sender got its `200`; the record, which makes
 * the delivery id a duplicate from then on, is kept in memory and written once the database
 * takes writes again. Meanwhile a retry of the same delivery id is a duplicate too. A gateway
 * that dies before writing them loses only the records (the messages were sent): a retry
 * after that is sent again, as at least once allows.
 *
 * @module
 */
import type { NewEvent, StateStore } from "../lib/state/mod.ts";
import { deliveryKey } from "./_direct.ts";

/** A direct delivery's outcome, as `StateStore.recordDirect` takes it. */
export type DirectOutcome = Parameters<StateStore["recordDirect"]>[1];

/** The held records. */
export interface HeldDirectRecords {
  /** Keeps a record the store refused, and tries it again after `retryMs`. */
  hold(event: NewEvent, outcome: DirectOutcome): void;
  /** Whether a delivered message with this subscription and delivery id waits to be recorded. */
  delivered(subscription: string, deliveryId: string): boolean;
  /**
   * Writes the held records now, in the order they were held.
   * @returns how many the store still refused (they stay held)
   */
  flush(): Promise<number>;
  /** Stops the retry timer (call after a last `flush()`). */
  stop(): void;
}

/**
 * @param store where the records go
 * @param options `retryMs`: the wait before writing held records again, in ms;
 *   `setTimer`: schedules a callback, returns its cancel function (tests pass a fake clock)
 * @returns the held records, empty
 */
export function createHeldDirectRecords(
  store: Pick<StateStore, "recordDirect">,
  options: {
    retryMs: number;
    setTimer?: (callback: () => void, delayMs: number) => () => void;
  },
): HeldDirectRecords {
  const setTimer = options.setTimer ?? ((callback, delayMs) => {
    const id = setTimeout(callback, delayMs);
    return () => clearTimeout(id);
  });
  const held = new Map<string, { event: NewEvent; outcome: DirectOutcome }>();
  let cancelTimer: (() => void) | undefined;
  let flushing: Promise<number> | undefined;
  let sequence = 0; // keys for messages without a delivery id, which are never duplicates

  function retryLater(): void {
    if (cancelTimer !== undefined || held.size === 0) return;
    cancelTimer = setTimer(() => {
      cancelTimer = undefined;
      void flush();
    }, options.retryMs);
  }

  async function writeAll(): Promise<number> {
    for (const [key, { event, outcome }] of [...held]) {
      try {
        await store.recordDirect(event, outcome);
        held.delete(key);
      } catch {
        break; // still refused: the rest waits too
      }
    }
    return held.size;
  }

  function flush(): Promise<number> {
    flushing ??= writeAll().finally(() => {
      flushing = undefined;
      retryLater();
    });
    return flushing;
  }

  return {
    hold(event, outcome) {
      // A later attempt at the same message replaces an earlier one's record.
      const key = event.dedupe
        ? deliveryKey(event.subscription, event.deliveryId)
        : `\u0000${sequence++}`;
      held.set(key, { event, outcome });
      retryLater();
    },
    delivered(subscription, deliveryId) {
      return held.get(deliveryKey(subscription, deliveryId))?.outcome.delivered === true;
    },
    flush,
    stop() {
      cancelTimer?.();
      cancelTimer = undefined;
    },
  };
}
