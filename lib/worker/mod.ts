/**
 * The worker (docs/durability.md): claims queued events from the state store, runs the agent,
 * delivers the answer, and decides what a failure means: retry later with backoff, or dead
 * letter. It also sends direct-delivery messages while their senders wait, through the same
 * delivery and the same held writes.
 *
 * Per event: when it has no saved response (agent mode), the agent runs with the system prompt
 * of the event's skills and its answer is saved at once (or, if the database refuses it for a
 * moment, with the attempt's outcome), so a delivery retry does not run the agent again; then
 * the answer (or, for a replayed direct-mode event, the message itself) is delivered, resuming
 * after the parts already sent. At most `maxConcurrency` events are in progress at once.
 *
 * This module is the worker's public face; its parts are the claim loop (`_loop.ts`), one
 * attempt at an event (`_run.ts`), a direct message sent now (`_direct.ts`), the job a delivery
 * is handed (`_job.ts`), the retry or dead-letter decision (`_decide.ts`), the pause of new runs
 * after the agent failed (`_pause.ts`), the writes held while the store refuses them
 * (`_outcomes.ts`) and clock steps (`_clock.ts`), sharing one {@link WorkerCore} (`_core.ts`).
 *
 * @module
 */
import { DEFAULT_RETRY, type RetryPolicy } from "./retry.ts";
import { realTimer, type SetTimer } from "./timer.ts";
import type { AgentRunner } from "../agents/mod.ts";
import type { MetricsRecorder } from "../metrics/mod.ts";
import type { NewEvent, StateStore } from "../state/mod.ts";
import type { DeliveryJob, DeliveryReceipt, OnPartSent } from "../targets/mod.ts";
import { createClockFollower } from "./_clock.ts";
import type { WorkerCore } from "./_core.ts";
import { pump, restStore, waitForRuns } from "./_loop.ts";
import { deliverDirect, type DirectResult } from "./_direct.ts";
import { createHeldOutcomes } from "./_outcomes.ts";
import { createRunPause } from "./_pause.ts";

export type { RetryPolicy } from "./retry.ts";
export type { SetTimer } from "./timer.ts";
export { AGENT_FAILURE_PAUSE_MS, MAX_PAUSE_MS, UNAVAILABLE_BEFORE_PAUSE } from "./_pause.ts";
export { MAX_HELD_WRITES, STORE_REFUSED_RETRY_MS } from "./_outcomes.ts";
export { deliveryKey, type DirectResult } from "./_direct.ts";

/**
 * Delivers a message to its target.
 * @param job what to deliver where
 * @param onPartSent called after each part is delivered, with the number of parts delivered so
 *   far (counting `partsAlreadySent`), the number of parts in all and the part as sent (the
 *   platform's message id), so a crash in the middle does not resend them; a promise it returns
 *   is awaited before the next part goes out
 * @param options `senderWaits`: a direct message whose sender waits for the answer (a
 *   platform's rate limit is then waited out only briefly)
 * @returns which target sent it, in how many parts
 * @throws TargetError when the delivery fails (`permanent`, `retryAfterSeconds`)
 */
export type DeliverFn = (
  job: DeliveryJob,
  onPartSent: OnPartSent,
  options?: { senderWaits?: boolean },
) => Promise<DeliveryReceipt>;

/** What the worker needs. */
export interface WorkerDeps {
  store: StateStore;
  runAgent: AgentRunner;
  deliver: DeliverFn;
  /** Builds the system prompt for a list of skills (`systemPromptFor` bound to the folder). */
  systemPrompt: (skills: string[]) => Promise<string>;
  /** Clock, in ms since the epoch. */
  now: () => number;
  /**
   * A clock that is never set, in ms, against which the worker sees when `now` was set back:
   * `performance.now` for the system clock. @default {`now` itself: no step is ever seen, as
   * suits a fake clock}
   */
  monotonicNow?: () => number;
  /** A value in [0, 1), for the backoff jitter. */
  random: () => number;
  setTimer?: SetTimer;
  /** Events in progress at once. @default {2} */
  maxConcurrency?: number;
  /** How failures are retried. @default {@link DEFAULT_RETRY}, field by field */
  retry?: Partial<RetryPolicy>;
  /** How often the queue is checked for events queued by another process (a CLI replay), ms. @default {1000} */
  pollIntervalMs?: number;
  /** One line per decision. */
  log: (level: "info" | "warn" | "error", message: string, props: Record<string, unknown>) => void;
  /**
   * The answer by which the agent chooses silence (`agent.silent_marker`): a saved answer that is
   * exactly this (trimmed) is delivered nowhere. @default {"[SILENT]"}
   */
  silentMarker?: string;
  /**
   * How long a delivery id is a duplicate after its message was delivered, in seconds: a
   * direct record held while the store refuses it counts that long. @default {86400}
   */
  idempotencyTtlSeconds?: number;
  /**
   * Told each event's end, `delivered` or `failed` for good, and each agent run's tokens
   * (docs/metrics.md). @default {nothing is recorded}
   */
  metrics?: Pick<MetricsRecorder, "event" | "llmTokens">;
}

/** A running worker. */
export interface EventWorker {
  /** Requeues events a previous run left `running`, then starts claiming. */
  start(): void;
  /** Tells the worker an event was just accepted, so it need not wait for its timer. */
  notify(): void;
  /**
   * Stops claiming, then waits for the events in progress. Agent runs still going after the
   * wait are stopped (a `command` program is killed), and the worker waits up to
   * {@link ABORT_GRACE_MS} more for the events in progress to end (deliveries are not stopped).
   * An event whose agent run the stop ended goes back to `queued`, its interrupted attempt not
   * counting; one whose run or delivery has not ended stays `running`, and the next start
   * requeues it as after a crash. The next start runs both.
   * @param options `deadlineMs`: the longest wait for the events in progress, in milliseconds;
   *   `hurry`: ends that wait as soon as it aborts (a second Ctrl-C)
   * @returns once the worker has stopped; never throws
   */
  stop(options: { deadlineMs: number; hurry?: AbortSignal }): Promise<void>;
  /**
   * Sends a direct-delivery message now, while its sender waits, through the same delivery
   * and held writes as the worker's events; see {@link DirectResult}.
   * @param event the verified, rendered event, as it would be stored
   * @param payload the parsed JSON body, for targets that read it (a forge comment's issue)
   * @returns what became of it; never throws for a failed delivery or a refused record
   * @example
   * const result = await worker.deliverNow(event, payload);
   * if (result.status === "failed") console.log(result.error, result.retryAfterSeconds);
   */
  deliverNow(event: NewEvent, payload: unknown): Promise<DirectResult>;
  /**
   * Tries the writes the store refused once more: at the very end of a stop, after the HTTP
   * side drained, since a direct delivery that ended meanwhile may have held its record.
   * @returns how many writes are still held (lost when the process exits)
   */
  flushHeld(): Promise<number>;
  /**
   * Resolves when nothing is in progress and nothing due now can start: none is due, the due
   * ones wait for an agent run the worker holds back after the agent failed, or the
   * worker leaves a store that refused a write alone for now (outcomes may then still be held,
   * their events `running` in the store). For tests.
   */
  idle(): Promise<void>;
}

/** How long `stop()` waits for aborted agent runs to end, in ms. */
export const ABORT_GRACE_MS = 2000;

/**
 * Creates the worker; nothing happens until `start()`.
 * @param deps store, agent runner, delivery, clock, timers, limits and log
 * @returns the worker
 */
export function createWorker(deps: WorkerDeps): EventWorker {
  const worker = coreFor(deps);
  return {
    start() {
      if (worker.started) return;
      worker.started = true;
      worker.stopping = false;
      void pump(worker);
    },
    notify() {
      if (worker.stopping || worker.pumpQueued) return;
      if (!worker.started || worker.running.size >= worker.maxConcurrency) return;
      if (worker.pause.leftMs() > 0) return; // a new event needs the agent; the timer ends the pause
      worker.pumpQueued = true;
      queueMicrotask(() => {
        worker.pumpQueued = false;
        void pump(worker);
      });
    },
    stop: (options) => stop(worker, options),
    deliverNow: (event, payload) => deliverDirect(worker, event, payload),
    async flushHeld() {
      await worker.outcomes.recordHeld();
      return worker.outcomes.heldKeys().length;
    },
    idle: () => idle(worker),
  };
}

/** The worker's shared state, its settings' defaults filled in, nothing started. */
function coreFor(deps: WorkerDeps): WorkerCore {
  const retry: RetryPolicy = {
    maxAttempts: deps.retry?.maxAttempts ?? DEFAULT_RETRY.maxAttempts,
    initialDelayMs: deps.retry?.initialDelayMs ?? DEFAULT_RETRY.initialDelayMs,
    maxDelayMs: deps.retry?.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs,
  };
  const worker: WorkerCore = {
    deps,
    setTimer: deps.setTimer ?? realTimer,
    maxConcurrency: Math.max(1, deps.maxConcurrency ?? 2),
    pollIntervalMs: deps.pollIntervalMs ?? 1000,
    retry,
    running: new Map(),
    stopRuns: new AbortController(),
    pause: createRunPause(() => deps.now(), retry),
    outcomes: createHeldOutcomes(deps.log, () => restStore(worker)),
    followClockSteps: createClockFollower(deps),
    directInFlight: new Set(),
    idempotencyTtlMs: (deps.idempotencyTtlSeconds ?? 86_400) * 1000,
    heldSequence: 0,
    started: false,
    stopping: false,
    pumpQueued: false,
    passing: undefined,
    passAgain: false,
    interruptedResumed: false,
    cancelTimer: undefined,
  };
  return worker;
}

/** {@link EventWorker.stop} */
async function stop(
  worker: WorkerCore,
  { deadlineMs, hurry }: { deadlineMs: number; hurry?: AbortSignal },
): Promise<void> {
  const { running, deps: { log } } = worker;
  worker.stopping = true;
  worker.cancelTimer?.();
  worker.cancelTimer = undefined;
  // A pass under way may be claiming: what it launches is waited for below. Its rejection
  // (a store that cannot requeue at start) is the start's, reported there.
  if (worker.passing !== undefined) await worker.passing.catch(() => {});
  // The timer that would end a rest is gone: what ends during the stop tries the store again
  // (and a refusal rests it until the stop's last write), rather than nothing being written.
  worker.outcomes.resting = false;
  if (running.size > 0) await waitForRuns(worker, { timeoutMs: deadlineMs, hurry });
  if (running.size > 0) {
    worker.stopRuns.abort();
    await waitForRuns(worker, { timeoutMs: ABORT_GRACE_MS });
  }
  await worker.outcomes.recordHeld();
  const held = worker.outcomes.heldKeys();
  if (held.length > 0) {
    log(
      "error",
      "worker stopped with outcomes it could not record; they run again at the next start",
      { event_ids: held },
    );
  }
  if (running.size > 0) {
    log("warn", "worker stopped with events in progress", { running: [...running.keys()] });
  }
}

/** {@link EventWorker.idle} */
async function idle(worker: WorkerCore): Promise<void> {
  const { running, deps } = worker;
  while (true) {
    // A pass under way (a held write, a claim) is part of what is in progress.
    if (worker.passing !== undefined) {
      await worker.passing.catch(() => {});
      continue;
    }
    if (running.size > 0) {
      await Promise.allSettled([...running.values()]);
      continue;
    }
    const due = await deps.store.nextDueAtMs();
    if (!worker.started || worker.stopping || due === null || due > deps.now()) return;
    await pump(worker);
    if (running.size === 0) return;
  }
}
