/**
 * Retention in the running gateway: old events, with their idempotency keys, are pruned at
 * start and then every hour, in small batches with requests served in between.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { StateStore } from "../lib/state/mod.ts";

const log = getLogger(["agent", "worker"]);

/**
 * Rows deleted per prune batch, each one transaction on the event loop, during which no request
 * is served: small enough that a batch of large payloads, overwritten by secure_delete, stays
 * short.
 */
const PRUNE_BATCH = 250;

/** How often old events (with their idempotency keys) are pruned, in milliseconds. */
const PRUNE_INTERVAL_MS = 60 * 60 * 1000;

/** The pruning of a running gateway. */
export interface Pruning {
  /** Stops the timer; a batch under way is the last, and a failure after it is not logged. */
  stop(): void;
}

/**
 * Prunes old events now, then every {@link PRUNE_INTERVAL_MS}. A failure is logged, never
 * thrown.
 * @param store the state database
 * @param options `retentionDays`: how long finished events are kept, in days; `now`: the clock,
 *   in milliseconds since the epoch
 * @returns the pruning, to stop
 */
export function startPruning(
  store: StateStore,
  options: { retentionDays: number; now: () => number },
): Pruning {
  let stopping = false;
  let pruning = false;
  const prune = async () => {
    // A prune still going after an hour (a huge backlog) is not joined by a second one.
    if (pruning) return;
    pruning = true;
    const total = { events: 0 };
    try {
      // Batches of PRUNE_BATCH rows, with requests served in between.
      while (!stopping) {
        const pruned = await store.prune(options.now(), {
          retentionDays: options.retentionDays,
          maxRows: PRUNE_BATCH,
        });
        total.events += pruned.events;
        if (pruned.events < PRUNE_BATCH) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    } catch (error) {
      // A busy or full database must not end the process: the next hour tries again. (A stop
      // closes the store under a batch waiting for its checkpoint: nothing to say then.)
      if (!stopping) {
        log.warn("prune failed: {reason}", { reason: (error as Error).message });
      }
    } finally {
      pruning = false;
    }
    if (total.events) log.info("pruned old events", total);
  };
  void prune();
  const timer = setInterval(prune, PRUNE_INTERVAL_MS);
  return {
    stop() {
      stopping = true;
      clearInterval(timer);
    },
  };
}
