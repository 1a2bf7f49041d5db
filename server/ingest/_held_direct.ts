/**
 * Direct deliveries whose outcome the state database refused to record (locked by another
 * process, full). The message went out, so the sender got its `200`; the record, which makes
 * the delivery id a duplicate from then on, is kept in memory and written once the database
 * takes writes again. Meanwhile a retry of the same delivery id is a duplicate too, within the
 * idempotency window counted from the delivery. A gateway that dies before writing them loses
 * only the records (the messages were sent): a retry after that is sent again, as at least
 * once allows. At most {@link MAX_HELD_RECORDS} are held; beyond, the oldest is dropped.
 *
 * @module
 */
import type { DirectOutcome, NewEvent, StateStore } from "../../lib/state/mod.ts";
import { realTimer, type SetTimer } from "../../lib/worker/timer.ts";
import { deliveryKey } from "./_direct.ts";

/** The most records held at once: each keeps its event, payload included. */
export const MAX_HELD_RECORDS = 1000;

/** The held records. */
export interface HeldDirectRecords {
  /**
   * Keeps a record the store refused, and tries it again after `retryMs` (not after `stop()`).
   * @param atMs when the delivery ended: its record, and its delivery id's window, count from it
   */
  hold(event: NewEvent, outcome: DirectOutcome, atMs: number): void;
  /**
   * Whether a delivered message with this subscription and delivery id waits to be recorded,
   * delivered less than the idempotency window before `nowMs`.
   */
  delivered(subscription: string, deliveryId: string, nowMs: number): boolean;
  /**
   * Writes the held records now, in the order they were held, including those held while it
   * writes, until the store refuses one.
   * @returns how many are still held
   */
  flush(): Promise<number>;
  /** Stops the retry timer; records held after this are only kept (call after a last flush). */
  stop(): void;
}

/**
 * @param store where the records go
 * @param options `retryMs`: the wait before writing held records again, in ms; `ttlMs`: the
 *   idempotency window; `onDropped`: told of a record dropped at the cap; `setTimer`: schedules
 *   a callback, returns its cancel function (tests pass a fake clock)
 * @returns the held records, empty
 */
export function createHeldDirectRecords(
  store: Pick<StateStore, "recordDirect">,
  options: {
    retryMs: number;
    ttlMs: number;
    onDropped?: (event: NewEvent) => void;
    setTimer?: SetTimer;
  },
): HeldDirectRecords {
  const setTimer = options.setTimer ?? realTimer;
  type Entry = { event: NewEvent; outcome: DirectOutcome; atMs: number };
  const held = new Map<string, Entry>();
  let cancelTimer: (() => void) | undefined;
  let flushing: Promise<number> | undefined;
  let stopped = false;
  let sequence = 0; // keys for messages without a delivery id, which are never duplicates

  function retryLater(): void {
    if (stopped || cancelTimer !== undefined || held.size === 0) return;
    cancelTimer = setTimer(() => {
      cancelTimer = undefined;
      void flush();
    }, options.retryMs);
  }

  async function writeAll(): Promise<number> {
    // Passes until none is left, or the store refuses one (the rest waits behind it).
    while (held.size > 0) {
      for (const [key, entry] of [...held]) {
        try {
          await store.recordDirect(entry.event, { ...entry.outcome, atMs: entry.atMs });
        } catch {
          return held.size;
        }
        // Only this entry: a newer one held under the same key meanwhile stays.
        if (held.get(key) === entry) held.delete(key);
      }
    }
    return 0;
  }

  function flush(): Promise<number> {
    flushing ??= writeAll().finally(() => {
      flushing = undefined;
      retryLater();
    });
    return flushing;
  }

  return {
    hold(event, outcome, atMs) {
      // A later attempt at the same message replaces an earlier one's record.
      const key = event.dedupe
        ? deliveryKey(event.subscription, event.deliveryId)
        : `\u0000${sequence++}`;
      held.delete(key);
      held.set(key, { event, outcome, atMs });
      if (held.size > MAX_HELD_RECORDS) {
        const [oldest, entry] = held.entries().next().value!;
        held.delete(oldest);
        options.onDropped?.(entry.event);
      }
      retryLater();
    },
    delivered(subscription, deliveryId, nowMs) {
      const entry = held.get(deliveryKey(subscription, deliveryId));
      return entry?.outcome.delivered === true && nowMs - entry.atMs < options.ttlMs;
    },
    flush,
    stop() {
      stopped = true;
      cancelTimer?.();
      cancelTimer = undefined;
    },
  };
}
