/**
 * A real worker, never started, that sends direct-delivery messages for an app under test
 * through a fake delivery: `IngestDeps.deliverNow` as the gateway wires it.
 */
import type { StateStore } from "../../lib/state/mod.ts";
import { createWorker, type DeliverFn, type EventWorker } from "../../lib/worker/mod.ts";

/**
 * @param store the app's state store
 * @param deliver the fake delivery
 * @param options `now`: the clock (@default {Date.now}); `setTimer`: the worker's timers (a
 *   fake runs the store's rest by hand); `idempotencyTtlSeconds`
 * @returns the worker, whose `deliverNow` goes into `IngestDeps`
 */
export function directWorker(
  store: StateStore,
  deliver: DeliverFn,
  options: {
    now?: () => number;
    setTimer?: (callback: () => void, delayMs: number) => () => void;
    idempotencyTtlSeconds?: number;
  } = {},
): EventWorker {
  return createWorker({
    store,
    runAgent: () => Promise.reject(new Error("no agent runs in direct mode")),
    deliver,
    systemPrompt: () => Promise.resolve(""),
    now: options.now ?? Date.now,
    random: () => 0.5,
    setTimer: options.setTimer,
    idempotencyTtlSeconds: options.idempotencyTtlSeconds,
    log: () => {},
  });
}
