/**
 * What the parts of one worker share: its dependencies and settings with their defaults
 * filled in, the events and direct deliveries in progress and the state of its claim loop, the
 * attempt at an event in progress, and how an error is described in the log and the state database.
 *
 * @module
 */
import { cutText, errorMessage } from "../errors.ts";
import type { RetryPolicy } from "./retry.ts";
import type { SetTimer } from "./timer.ts";
import type { AgentRun, PartReceipt, StoredEvent } from "../state/mod.ts";
import type { RunPause } from "./_pause.ts";
import type { HeldOutcomes } from "./_outcomes.ts";
import type { WorkerDeps } from "./mod.ts";

/** The longest error description the worker logs or stores, in characters. */
const MAX_ERROR_CHARS = 2000;

/** One worker: what `createWorker` builds and its parts share. */
export interface WorkerCore {
  /** What the worker was created with. */
  readonly deps: WorkerDeps;
  /** `deps.setTimer`, or `realTimer` (`timer.ts`). */
  readonly setTimer: SetTimer;
  /** Events in progress at once, at least 1. */
  readonly maxConcurrency: number;
  /** How often the queue is checked, in ms. */
  readonly pollIntervalMs: number;
  /** `deps.retry` over the defaults. */
  readonly retry: RetryPolicy;
  /** The events in progress, by id: each one's attempt, which never rejects. */
  readonly running: Map<string, Promise<void>>;
  /** Aborted when `stop()` gives up waiting: ends the agent runs in progress. */
  readonly stopRuns: AbortController;
  /** The pause of new agent runs after the agent failed runs whatever their prompt. */
  readonly pause: RunPause;
  /** Outcomes the store refused, and whether it rests. */
  readonly outcomes: HeldOutcomes;
  /** The direct deliveries being sent now, by {@link deliveryKey}. */
  readonly directInFlight: Set<string>;
  /** How long a delivered direct message's delivery id is a duplicate, in ms. */
  readonly idempotencyTtlMs: number;
  /** Numbers the held records of direct messages without a delivery id of their own. */
  heldSequence: number;
  /** Moves the queued events when the system clock was set back. */
  readonly followClockSteps: () => Promise<void>;
  /** Whether `start()` was called. */
  started: boolean;
  /** Whether `stop()` was called since. */
  stopping: boolean;
  /** Whether a pass of the loop is queued as a microtask by `notify()`. */
  pumpQueued: boolean;
  /** The passes of the loop under way, if any: one at a time. */
  passing: Promise<void> | undefined;
  /** Whether a pass was asked for while one ran: it makes one more. */
  passAgain: boolean;
  /** Whether the events left `running` by a gateway that died are queued again. */
  interruptedResumed: boolean;
  /** Cancels the timer of the next pass of the loop, if one is set. */
  cancelTimer: (() => void) | undefined;
}

/** One attempt at a stored event, as it goes (its record is `Attempt` in the state store). */
export interface AttemptInProgress {
  /** The event as claimed. */
  readonly event: StoredEvent;
  /** The event's id, subscription and attempt number, for the log. */
  readonly context: Record<string, unknown>;
  /** The step the attempt is at: the one a failure is recorded against. */
  step: "agent" | "delivery";
  /** Parts of the message delivered so far, counting those delivered before the attempt. */
  partsDelivered: number;
  // What the store refused during the attempt (a locked database): the agent's answer and the
  // parts delivered, written again with the attempt's outcome, so neither is lost.
  /** The agent's answer and the run that gave it, not written yet. */
  responseNotRecorded: { text: string; run: AgentRun; prompt?: string } | undefined;
  /**
   * The parts delivered, not written yet: `sent` of `parts` in all, with the receipts of
   * those sent since the last write.
   */
  partsNotRecorded: { sent: number; parts: number; receipts: PartReceipt[] } | undefined;
  /** Writes both, if any, in that order, and forgets each once written. */
  readonly writeRefused: () => Promise<void>;
}

/**
 * An error's message for the worker's log and the state database, cut to 2000 characters.
 * @param error what was thrown (anything)
 * @returns the message, with `…` where it was cut
 */
export function describe(error: unknown): string {
  return cutText(errorMessage(error), MAX_ERROR_CHARS);
}
