/**
 * The worker's claim loop: each pass writes the outcomes the store refused, follows clock steps,
 * claims as many due events as there are free slots and launches them, then sets the timer of
 * the next pass. A store that refuses a write makes the loop rest.
 *
 * @module
 */
import { StoreUnavailableError } from "../errors.ts";
import type { StoredEvent } from "../state/mod.ts";
import { settledWithin } from "./wait.ts";
import { describe, type WorkerCore } from "./_core.ts";
import { STORE_REFUSED_RETRY_MS } from "./_outcomes.ts";
import { runEvent } from "./_run.ts";

/**
 * Makes a pass of the loop; does nothing before `start()`, after `stop()` or while the store
 * rests. One pass at a time: a call during a pass makes one more pass after it, so an event
 * accepted or a run ended meanwhile is not missed.
 * @param worker the worker
 * @returns once the passes asked for so far are made
 * @throws whatever the store throws but {@link StoreUnavailableError} when requeueing the
 *   interrupted events (a rejection)
 */
export function pump(worker: WorkerCore): Promise<void> {
  if (worker.passing !== undefined) {
    worker.passAgain = true;
    return worker.passing;
  }
  const passes = async () => {
    do {
      worker.passAgain = false;
      await pass(worker);
    } while (worker.passAgain);
  };
  const passing = passes().finally(() => worker.passing = undefined);
  worker.passing = passing;
  return passing;
}

/** One pass: held writes, clock steps, claims, then the timer of the next pass. */
async function pass(worker: WorkerCore): Promise<void> {
  const { deps: { store, log }, running } = worker;
  if (!worker.started || worker.stopping || worker.outcomes.resting) return;
  if (!worker.interruptedResumed && !(await resumeInterrupted(worker))) return restStore(worker);
  if (!(await worker.outcomes.recordHeld())) return restStore(worker);
  await worker.followClockSteps();
  const free = worker.maxConcurrency - running.size;
  if (free > 0 && !worker.stopping) {
    try {
      // While the agent fails every run, only events that do not need it start.
      const deliveryOnly = worker.pause.leftMs() > 0;
      // Claimed events are launched even if a stop began meanwhile: it waits for this pass.
      for (const event of await store.claimDue(worker.deps.now(), free, { deliveryOnly })) {
        launch(worker, event);
      }
    } catch (error) {
      log("error", "claim failed", { error: describe(error) });
      return restStore(worker);
    }
  }
  await wakeLater(worker);
}

/**
 * Requeues the events a gateway that died left `running`, before the first claim. A store
 * that refuses the write (locked past its busy timeout, or a full disk) does not stop the
 * start: the worker rests and tries again, as after any refused write, while ingest answers
 * 503 until the store takes writes again.
 * @returns false when the store refused
 */
async function resumeInterrupted(worker: WorkerCore): Promise<boolean> {
  const { store, log } = worker.deps;
  try {
    const count = await store.recoverInterrupted(worker.deps.now());
    worker.interruptedResumed = true;
    if (count > 0) log("info", "resumed interrupted events", { count });
    return true;
  } catch (error) {
    if (!(error instanceof StoreUnavailableError)) throw error;
    log("error", "cannot resume interrupted events yet; trying again", {
      error: describe(error),
    });
    return false;
  }
}

/**
 * The store refused a write (locked by another process past its busy timeout, or full): each
 * such write held the event loop for the busy timeout, which ingest needs to answer its own
 * requests (with 503, about a second after the lock began). So for
 * {@link STORE_REFUSED_RETRY_MS} the worker neither claims nor writes: the outcomes of the
 * events in progress are held, as refused ones are, and written once the rest is over. With a
 * lock held 25 s and 12 events queued, senders waited 6 to 21 s for their 503 while every
 * outcome and claim waited out the busy timeout.
 * @param worker the worker, whose store rests from now on
 */
export function restStore(worker: WorkerCore): void {
  worker.outcomes.resting = true;
  if (worker.stopping) return; // stop() writes what is held once more; no timer outlives it
  const { setTimer } = worker;
  worker.cancelTimer?.();
  worker.cancelTimer = setTimer(() => {
    worker.outcomes.resting = false;
    void pump(worker);
  }, STORE_REFUSED_RETRY_MS);
}

/** Sets the timer for the next due event, and never later than the poll interval. */
async function wakeLater(worker: WorkerCore): Promise<void> {
  const { pollIntervalMs, setTimer } = worker;
  let delayMs = pollIntervalMs;
  const pausedMs = worker.pause.leftMs();
  if (pausedMs > 0) {
    delayMs = Math.min(pollIntervalMs, pausedMs);
  } else if (worker.running.size < worker.maxConcurrency) {
    try {
      const due = await worker.deps.store.nextDueAtMs();
      if (due !== null) delayMs = Math.min(pollIntervalMs, Math.max(1, due - worker.deps.now()));
    } catch (error) {
      // A busy database: poll again at the interval rather than end the process.
      worker.deps.log("warn", "cannot read the next due time", { error: describe(error) });
    }
  }
  // A stop, or a rest, that began during the read sets no timer of ours to outlive it.
  if (worker.stopping || worker.outcomes.resting) return;
  worker.cancelTimer?.();
  worker.cancelTimer = setTimer(() => void pump(worker), delayMs);
}

/** Runs an event in progress; when it ends, the loop makes another pass. */
function launch(worker: WorkerCore, event: StoredEvent): void {
  const task = runEvent(worker, event)
    .catch((error) => {
      worker.deps.log("error", "worker error", { event_id: event.id, error: describe(error) });
    })
    .finally(() => {
      worker.running.delete(event.id);
      void pump(worker);
    });
  worker.running.set(event.id, task);
}

/**
 * Waits until nothing is in progress, at most `timeoutMs` and no longer than `hurry`.
 * @param worker the worker
 * @param options `timeoutMs`: the longest wait, in ms; `hurry`: ends the wait when it aborts
 * @returns true when nothing is in progress any more, false when the wait was cut short
 */
export function waitForRuns(
  worker: WorkerCore,
  options: { timeoutMs: number; hurry?: AbortSignal },
): Promise<boolean> {
  return settledWithin(Promise.allSettled([...worker.running.values()]), options.timeoutMs, {
    signal: options.hurry,
    setTimer: worker.setTimer,
  });
}
