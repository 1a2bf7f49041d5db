/**
 * Reading events for the CLI (`webhook events`): listing them, finding one by id or prefix,
 * and its attempts; and the queue's size, for the metrics.
 *
 * @module
 */
import { listEvents } from "./_maintenance.ts";
import { rowToAttempt } from "./_schema.ts";
import type { Row, StoreCore } from "./_store_core.ts";
import type { StateStore } from "../mod.ts";

/** The methods of the store that read events. */
export type ReadingOps = Pick<
  StateStore,
  "listEvents" | "getEvent" | "attempts" | "queueStats"
>;

/**
 * The store's methods that read events.
 * @param core the store
 * @returns the methods, as {@link StateStore} documents them
 */
export function readingOps(core: StoreCore): ReadingOps {
  const { db, s, use } = core;
  return {
    listEvents: (filter) => use(() => listEvents(db, filter)),
    getEvent: (eventId) => use(() => core.findEvent(eventId)),
    attempts: (eventId) =>
      use(() => {
        const id = core.findEvent(eventId)?.id ?? eventId;
        return (s.attempts.all(id) as Row[]).map(rowToAttempt);
      }),
    queueStats: () =>
      use(() => {
        const row = s.queueStats.get() as Row;
        return {
          queued: Number(row.queued),
          oldestQueuedAtMs: row.oldest === null ? null : Number(row.oldest),
        };
      }),
  };
}
