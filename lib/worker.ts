/**
 * The worker (CONTRACT §8): claims queued events from the state store, runs the agent, delivers
 * the answer, and decides what a failure means: retry later with backoff, or dead letter.
 *
 * Per event: when it has no saved response (agent mode), the agent runs with the system prompt
 * of the event's skills and its answer is saved at once (or, if the database refuses it for a
 * moment, with the attempt's outcome), so a delivery retry does not run the agent again; then
 * the answer (or, for a replayed direct-mode event, the message itself) is delivered, resuming
 * after the parts already sent. At most `maxConcurrency` events are in progress at once.
 *
 * @module
 */
import { retryDelayMs } from "./_retry.ts";
import { settledWithin } from "./wait.ts";
import { setImmediate } from "node:timers";
import {
  AgentError,
  ConfigError,
  NotFoundError,
  StoreUnavailableError,
  TargetError,
} from "./errors.ts";
import type { AgentRunner } from "./agents/mod.ts";
import { needsAgentRun, type StateStore, type StoredEvent } from "./state/mod.ts";
import type { DeliveryJob } from "./targets/mod.ts";

/**
 * Delivers a message to its target.
 * @param job what to deliver where
 * @param onPartSent called after each part is delivered, with the number of parts delivered so
 *   far (counting `partsAlreadySent`) and the number of parts in all, so a crash in the middle
 *   does not resend them
 * @throws TargetError when the delivery fails (`permanent`, `retryAfterSeconds`)
 */
export type DeliverFn = (
  job: DeliveryJob,
  onPartSent: (partsSent: number, parts: number) => void,
) => Promise<unknown>;

/**
 * Schedules a callback; returns a function that cancels it. Tests pass a fake one.
 * @default setTimeout/clearTimeout
 */
export type SetTimer = (callback: () => void, delayMs: number) => () => void;

/** How failures are retried. */
export interface RetryPolicy {
  /** Attempts per event before it is dead-lettered. @default {5} */
  maxAttempts: number;
  /** Backoff after the first failure, in ms; doubles each attempt. @default {10_000} */
  initialDelayMs: number;
  /** Longest backoff, in ms (a `Retry-After` may ask for more). @default {3_600_000} */
  maxDelayMs: number;
}

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
  retry?: Partial<RetryPolicy>;
  /** How often the queue is checked for events queued by another process (a CLI replay), ms. @default {1000} */
  pollIntervalMs?: number;
  /** One line per decision. */
  log: (level: "info" | "warn" | "error", message: string, props: Record<string, unknown>) => void;
  /**
   * Whether the sender's retry of a direct message is being sent by the HTTP side right now:
   * a replay of it then waits, rather than send it a second time. @default {never}
   */
  isBeingSent?: (subscription: string, deliveryId: string) => boolean;
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
   * Resolves when nothing is in progress and nothing due now can start: none is due, the due
   * ones wait for an agent run the worker holds back after the LLM endpoint failed, or the
   * worker leaves a store that refused a write alone for now (outcomes may then still be held,
   * their events `running` in the store). For tests.
   */
  idle(): Promise<void>;
}

const MAX_ERROR_CHARS = 2000;

/** A wall clock set back by more than this, in ms, moves the queued events with it. */
const CLOCK_STEP_MS = 1000;

/** How long no new agent run starts after the LLM endpoint failed runs, in ms (see Retry-After). */
export const AGENT_FAILURE_PAUSE_MS = 1000;

/** The longest such pause, whatever `Retry-After` the endpoint sent, in ms. */
export const MAX_PAUSE_MS = 10_000;

/** Events the endpoint failed, with no success since, that begin a pause. */
export const UNAVAILABLE_BEFORE_PAUSE = 2;

/** How long the worker leaves the store alone after it refused a write, in ms. */
export const STORE_REFUSED_RETRY_MS = 5000;

/** How long `stop()` waits for aborted agent runs to end, in ms. */
export const ABORT_GRACE_MS = 2000;

/**
 * Creates the worker; nothing happens until `start()`.
 * @param deps store, agent runner, delivery, clock, timers, limits and log
 * @returns the worker
 */
export function createWorker(deps: WorkerDeps): EventWorker {
  const { store, log } = deps;
  const setTimer = deps.setTimer ?? realTimer;
  const maxConcurrency = Math.max(1, deps.maxConcurrency ?? 2);
  const pollIntervalMs = deps.pollIntervalMs ?? 1000;
  const retry: RetryPolicy = {
    maxAttempts: deps.retry?.maxAttempts ?? 5,
    initialDelayMs: deps.retry?.initialDelayMs ?? 10_000,
    maxDelayMs: deps.retry?.maxDelayMs ?? 3_600_000,
  };
  const running = new Map<string, Promise<void>>();
  /**
   * Outcomes that could not be written (a locked or full database), by event id, oldest first:
   * their events stay `running` in the store, where nothing claims them, so the writes are
   * tried again on every pass of the loop (every `pollIntervalMs`, and after each event ends;
   * {@link STORE_REFUSED_RETRY_MS} after a refusal) while the worker runs. A delivered message
   * is thus recorded as delivered rather than sent again by a retry. What is still unwritten
   * when the worker stops runs again at the next start (at least once).
   */
  const unrecorded = new Map<string, () => void>();
  const stopRuns = new AbortController();
  let started = false;
  let stopping = false;
  let pumpQueued = false;
  /** The store refused a write: the worker leaves it alone until the timer ends this. */
  let storeResting = false;
  /** Whether the events left `running` by a gateway that died are queued again. */
  let interruptedResumed = false;
  let cancelTimer: (() => void) | undefined;
  const monotonicNow = deps.monotonicNow ?? deps.now;
  /** The wall clock and the steady one when {@link followClockSteps} last looked. */
  let clockSeen = { wallMs: deps.now(), steadyMs: monotonicNow() };
  /** No new agent run starts before this time (ms since the epoch): see {@link pauseNewRuns}. */
  let pausedUntilMs = 0;
  /** How long that pause was when it was set, in ms. */
  let pauseLengthMs = 0;
  /** Events whose run the endpoint failed (`AgentError.unavailable`) since the last success. */
  const failedByEndpoint = new Set<string>();
  const longestPauseMs = Math.min(MAX_PAUSE_MS, retry.initialDelayMs / 2);

  function pump(): void {
    if (!started || stopping || storeResting) return;
    if (!interruptedResumed && !resumeInterrupted()) return restStore();
    if (!recordHeldOutcomes()) return restStore();
    followClockSteps();
    const free = maxConcurrency - running.size;
    if (free > 0) {
      try {
        // While the LLM endpoint is down, only events that do not need it start.
        const deliveryOnly = pauseLeftMs() > 0;
        for (const event of store.claimDue(deps.now(), free, { deliveryOnly })) launch(event);
      } catch (error) {
        log("error", "claim failed", { error: describe(error) });
        return restStore();
      }
    }
    wakeLater();
  }

  /**
   * Requeues the events a gateway that died left `running`, before the first claim. A store
   * that refuses the write (locked past its busy timeout, or a full disk) does not stop the
   * start: the worker rests and tries again, as after any refused write, while ingest answers
   * 503 until the store takes writes again.
   * @returns false when the store refused
   */
  function resumeInterrupted(): boolean {
    try {
      const count = store.recoverInterrupted(deps.now());
      interruptedResumed = true;
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
   */
  function restStore(): void {
    storeResting = true;
    if (stopping) return; // stop() writes what is held once more; no timer outlives it
    cancelTimer?.();
    cancelTimer = setTimer(() => {
      storeResting = false;
      pump();
    }, STORE_REFUSED_RETRY_MS);
  }

  /** Sets the timer for the next due event, and never later than the poll interval. */
  function wakeLater(): void {
    cancelTimer?.();
    let delayMs = pollIntervalMs;
    const pausedMs = pauseLeftMs();
    if (pausedMs > 0) {
      delayMs = Math.min(pollIntervalMs, pausedMs);
    } else if (running.size < maxConcurrency) {
      try {
        const due = store.nextDueAtMs();
        if (due !== null) delayMs = Math.min(pollIntervalMs, Math.max(1, due - deps.now()));
      } catch (error) {
        // A busy database: poll again at the interval rather than end the process.
        log("warn", "cannot read the next due time", { error: describe(error) });
      }
    }
    cancelTimer = setTimer(pump, delayMs);
  }

  /**
   * Writes an event's outcome; when the store fails, keeps the write for the next pass of the
   * loop instead of leaving the event `running` until a restart.
   */
  function record(eventId: string, write: () => void): void {
    if (storeResting) {
      unrecorded.set(eventId, write);
      log("warn", "outcome held while the state database refuses writes", { eventId });
      return;
    }
    try {
      write();
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      unrecorded.set(eventId, write);
      log("error", "cannot record the outcome yet; trying again", {
        eventId,
        error: describe(error),
      });
      restStore();
    }
  }

  /**
   * Tries the held writes in order. The first one the store still refuses ends the pass (each
   * refusal may have waited the busy timeout) and goes to the back of the line, so a write that
   * keeps failing does not hold up the others.
   * @returns false when the store refused one
   */
  function recordHeldOutcomes(): boolean {
    for (const [eventId, write] of [...unrecorded]) {
      try {
        write();
        unrecorded.delete(eventId);
        log("info", "outcome recorded", { eventId });
      } catch (error) {
        unrecorded.delete(eventId);
        if (error instanceof StoreUnavailableError) {
          unrecorded.set(eventId, write);
          return false;
        }
        log("error", "cannot record the outcome", { eventId, error: describe(error) });
      }
    }
    return true;
  }

  /** Waits until nothing is in progress, at most `timeoutMs` and no longer than `hurry`. */
  function waitForRuns(timeoutMs: number, hurry?: AbortSignal): Promise<boolean> {
    return settledWithin(Promise.allSettled([...running.values()]), timeoutMs, {
      signal: hurry,
      setTimer,
    });
  }

  function launch(event: StoredEvent): void {
    const task = runEvent(event)
      .catch((error) => {
        log("error", "worker error", { eventId: event.id, error: describe(error) });
      })
      .finally(() => {
        running.delete(event.id);
        pump();
      });
    running.set(event.id, task);
  }

  async function runEvent(event: StoredEvent): Promise<void> {
    // A macrotask boundary per event: a backlog of events that fail without I/O (a missing
    // API key) must not starve the HTTP server or block a graceful stop.
    await new Promise((resolve) => setImmediate(resolve));
    if (event.attempts - event.uncountedAttempts > retry.maxAttempts) {
      // Attempts interrupted by crashes count too: an event that takes the process down every
      // time it runs ends as a dead letter instead of crashing it for ever.
      // Earlier attempts may have failed otherwise: their own errors stay on their attempts.
      const error = `not run again: its ${
        event.attempts - event.uncountedAttempts - 1
      } attempts are used up, the last one interrupted (a crash, or a stop it outlived)`;
      const nowMs = deps.now();
      record(event.id, () => store.markFailed(event.id, error, "agent", nowMs));
      log("error", "failed", { eventId: event.id, subscription: event.subscription, error });
      return;
    }
    const context = {
      eventId: event.id,
      subscription: event.subscription,
      attempt: event.attempts,
    };
    let step: "agent" | "delivery" = "delivery";
    // What the store refused during the attempt (a locked database): the agent's answer and the
    // parts delivered, written again with the attempt's outcome, so neither is lost.
    let responseNotRecorded: string | undefined;
    let partsNotRecorded: { sent: number; parts: number } | undefined;
    let partsDelivered = event.partsSent;
    const recordRefused = () => {
      if (responseNotRecorded !== undefined) {
        store.saveResponse(event.id, responseNotRecorded);
        responseNotRecorded = undefined;
      }
      if (partsNotRecorded !== undefined) {
        store.savePartsSent(event.id, partsNotRecorded.sent, {
          sentBefore: event.partsSent,
          parts: partsNotRecorded.parts,
        });
        partsNotRecorded = undefined;
      }
    };
    // Kept for the outcome's write while the store rests, or if it refuses now.
    const tryRecordRefused = () => {
      if (storeResting) return;
      try {
        recordRefused();
      } catch (error) {
        if (!(error instanceof StoreUnavailableError)) throw error;
        restStore();
      }
    };
    try {
      let text = event.mode === "agent" && event.response !== null ? event.response : event.prompt;
      if (needsAgentRun(event)) {
        step = "agent";
        const startedAt = deps.now();
        const systemPrompt = await deps.systemPrompt(event.route.skills);
        if (stopRuns.signal.aborted) {
          // Stopped before the run began: the next start runs it.
          return requeueStopped(event, context);
        }
        text = await deps.runAgent({
          prompt: event.prompt,
          systemPrompt,
          eventId: event.id,
          signal: stopRuns.signal,
        });
        // The answer is kept even when the store refuses it now: it is delivered, and written
        // with the outcome, instead of failing the attempt and running the agent again.
        responseNotRecorded = text;
        tryRecordRefused();
        // The endpoint answers again.
        pausedUntilMs = 0;
        failedByEndpoint.clear();
        log("info", "agent run ok", { ...context, ms: deps.now() - startedAt, chars: text.length });
        step = "delivery";
      }
      let job = jobFor(event, text);
      if (event.mode === "direct" && event.dedupe) {
        refuseIfSentMeanwhile(event);
        // The sender's own retries may have got more parts out since the replay was queued.
        job = { ...job, partsAlreadySent: store.resumeAfter(event) };
      }
      await deps.deliver(job, (partsSent, parts) => {
        // The part went out: a failing store must not turn that into a failed delivery.
        partsDelivered = partsSent;
        partsNotRecorded = { sent: partsSent, parts };
        tryRecordRefused();
      });
    } catch (error) {
      // A permanent error (a missing skill) still fails the event, stop or not.
      if (stopRuns.signal.aborted && step === "agent" && !isPermanent(error)) {
        return requeueStopped(event, context);
      }
      const progressed = partsDelivered > event.partsSent;
      decide(event, { step, error, progressed }, context, recordRefused);
      return;
    }
    const nowMs = deps.now();
    record(event.id, () => {
      recordRefused();
      store.markDelivered(event.id, nowMs);
    });
    log("info", "delivered", { ...context, target: event.route.deliver });
  }

  /**
   * A replayed direct message that the sender's own retry is sending right now (tried again
   * later), or delivered while the replay waited (its delivery id is another event's now: the
   * replay fails). Sending it too would deliver it twice.
   * @throws TargetError retryable while the retry is being sent, else permanent, naming the
   *   event that delivered it
   */
  function refuseIfSentMeanwhile(event: StoredEvent): void {
    if (deps.isBeingSent?.(event.subscription, event.deliveryId)) {
      throw new TargetError(
        `not sent yet: a request with delivery id ${event.deliveryId} is being sent now`,
        { retryAfterSeconds: 5 },
      );
    }
    const holder = store.keyHolder(event.subscription, event.deliveryId, deps.now());
    if (holder === null || holder === event.id) return;
    throw new TargetError(
      `not sent: a request with delivery id ${event.deliveryId} (the original or the sender's ` +
        `retry) was delivered meanwhile, as event ${holder}; agent webhook replay ${holder} ` +
        "sends it again",
      { permanent: true },
    );
  }

  /**
   * An agent run that stop() ended: the event goes back to the queue, due now, with the attempt
   * closed as interrupted (it does not count: the stop was not the event's doing, and a
   * restart must not use up the attempts of events it caught), so the next start runs it and, until
   * then, `events` shows it queued and `replay` accepts it. A write the store refuses is held
   * like an outcome and tried once more before the stop ends; if that fails too, the event
   * stays `running` and the next start resumes it all the same.
   */
  function requeueStopped(event: StoredEvent, context: Record<string, unknown>): void {
    log("warn", "agent run stopped by shutdown", context);
    record(event.id, () => store.recoverInterrupted(deps.now(), event.id));
  }

  /**
   * What a failed attempt means: a dead letter when the error is permanent or the attempts that
   * count are used up, else a retry with backoff. An attempt that delivered part of the message
   * before failing (a long answer meeting a chat's rate limit) does not count: it moved the
   * delivery on, and there are only as many such attempts as parts.
   */
  function decide(
    event: StoredEvent,
    failure: { step: "agent" | "delivery"; error: unknown; progressed: boolean },
    context: Record<string, unknown>,
    recordRefused: () => void,
  ): void {
    const { step, error, progressed } = failure;
    const message = describe(error);
    const nowMs = deps.now();
    const permanent = isPermanent(error);
    const counted = event.attempts - event.uncountedAttempts;
    if (error instanceof AgentError && error.unavailable) {
      // Counted per event: one event's own retries do not make an outage.
      failedByEndpoint.add(event.id);
      if (failedByEndpoint.size >= UNAVAILABLE_BEFORE_PAUSE) pauseNewRuns(error.retryAfterSeconds);
    }
    if (permanent || (counted >= retry.maxAttempts && !progressed)) {
      record(event.id, () => {
        recordRefused();
        store.markFailed(event.id, message, step, nowMs);
      });
      const reason = permanent ? "permanent error" : `${counted} attempts`;
      log("error", "failed", { ...context, step, reason, error: message });
      return;
    }
    const retryAfterSeconds = error instanceof AgentError || error instanceof TargetError
      ? error.retryAfterSeconds
      : undefined;
    const delayMs = retryDelayMs(counted, {
      ...retry,
      random: deps.random,
      retryAfterSeconds,
    });
    record(event.id, () => {
      recordRefused();
      store.markRetry(event.id, message, step, nowMs + delayMs, nowMs);
    });
    log("warn", "retry scheduled", {
      ...context,
      step,
      delayMs,
      error: message,
      ...(progressed ? { counted: false } : {}),
    });
  }

  /**
   * The LLM endpoint failed runs whatever their prompt (unreachable, 429, 5xx:
   * `AgentError.unavailable`) for {@link UNAVAILABLE_BEFORE_PAUSE} events with no success between:
   * the events queued behind them would fail the same way, so no new agent run starts for a
   * while, instead of one run after another failing at once. Events whose next step is a
   * delivery (direct messages, answers already saved) still start. During an outage the worker
   * then tries the endpoint about once a second per slot, and the ingest path keeps the CPU:
   * with the LLM's port closed, agent-mode ingest fell from 5,251 to 717 req/s (a hanging LLM
   * against a closed port, in the same run) while every new event was tried at once, two write
   * transactions per attempt. Events wait in the queue meanwhile, their attempts unspent, and a
   * run that succeeds ends the pause. It lasts 1 s, or what the endpoint's `Retry-After` asks,
   * and at most {@link MAX_PAUSE_MS} or half the first retry delay (so no event's own retry
   * waits for it beyond its jitter). Failures that may be the prompt's own (a 429 for a request
   * too large, say) pause nothing while other runs succeed between them.
   */
  function pauseNewRuns(retryAfterSeconds: number | undefined): void {
    const pauseMs = Math.min(
      longestPauseMs,
      Math.max(AGENT_FAILURE_PAUSE_MS, (retryAfterSeconds ?? 0) * 1000),
    );
    const untilMs = deps.now() + pauseMs;
    if (untilMs >= pausedUntilMs) [pausedUntilMs, pauseLengthMs] = [untilMs, pauseMs];
  }

  /**
   * When the system clock was set back (by NTP, or by hand) by more than a second since the last
   * look, moves every queued event by as much: an event due before the step is due as soon after
   * it, instead of waiting until the clock catches up (an hour's step held the backlog an hour
   * while events accepted after it ran first).
   */
  function followClockSteps(): void {
    const wallMs = deps.now();
    const steadyMs = monotonicNow();
    const stepMs = wallMs - clockSeen.wallMs - (steadyMs - clockSeen.steadyMs);
    if (stepMs > -CLOCK_STEP_MS) {
      clockSeen = { wallMs, steadyMs };
      return;
    }
    try {
      const moved = store.moveQueued(stepMs);
      clockSeen = { wallMs, steadyMs };
      log("warn", "the clock was set back; queued events moved with it", {
        seconds: Math.round(-stepMs / 1000),
        events: moved,
      });
    } catch (error) {
      // Tried again on the next pass: the step is still there to see.
      log("warn", "the clock was set back; cannot move the queued events yet", {
        error: describe(error),
      });
    }
  }

  /**
   * What is left of the pause, in ms (0 when none). More left than the pause was long means the
   * clock was set back: the pause is dropped, rather than holding every event until the clock
   * catches up.
   */
  function pauseLeftMs(): number {
    const left = pausedUntilMs - deps.now();
    if (left <= 0) return 0;
    if (left > pauseLengthMs) {
      pausedUntilMs = 0;
      return 0;
    }
    return left;
  }

  return {
    start() {
      if (started) return;
      started = true;
      stopping = false;
      pump();
    },
    notify() {
      if (!started || stopping || pumpQueued || running.size >= maxConcurrency) return;
      if (pauseLeftMs() > 0) return; // a new event needs the agent; the timer ends the pause
      pumpQueued = true;
      queueMicrotask(() => {
        pumpQueued = false;
        pump();
      });
    },
    async stop({ deadlineMs, hurry }) {
      stopping = true;
      cancelTimer?.();
      cancelTimer = undefined;
      if (running.size > 0) await waitForRuns(deadlineMs, hurry);
      if (running.size > 0) {
        stopRuns.abort();
        await waitForRuns(ABORT_GRACE_MS);
      }
      recordHeldOutcomes();
      if (unrecorded.size > 0) {
        log(
          "error",
          "worker stopped with outcomes it could not record; they run again at the next start",
          {
            eventIds: [...unrecorded.keys()],
          },
        );
      }
      if (running.size > 0) {
        log("warn", "worker stopped with events in progress", { running: [...running.keys()] });
      }
    },
    async idle() {
      while (true) {
        if (running.size > 0) {
          await Promise.allSettled([...running.values()]);
          continue;
        }
        const due = store.nextDueAtMs();
        if (!started || stopping || due === null || due > deps.now()) return;
        pump();
        if (running.size === 0) return;
      }
    },
  };
}

function jobFor(event: StoredEvent, text: string): DeliveryJob {
  let payload: unknown = event.payload;
  try {
    payload = JSON.parse(event.payload);
  } catch { /* stored as received: deliver the text */ }
  return {
    target: event.route.deliver,
    chatId: event.route.chatId,
    text,
    payload,
    source: event.source,
    subscription: event.subscription,
    eventType: event.eventType,
    eventId: event.id,
    deliveryId: event.deliveryId,
    partsAlreadySent: event.partsSent,
  };
}

/** Retrying cannot fix a permanent target/agent error, a missing skill or a broken SKILL.md. */
function isPermanent(error: unknown): boolean {
  if (error instanceof AgentError || error instanceof TargetError) return error.permanent;
  return error instanceof NotFoundError || error instanceof ConfigError;
}

function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.length > MAX_ERROR_CHARS ? message.slice(0, MAX_ERROR_CHARS) + "…" : message;
}

function realTimer(callback: () => void, delayMs: number): () => void {
  const id = setTimeout(callback, delayMs);
  return () => clearTimeout(id);
}
