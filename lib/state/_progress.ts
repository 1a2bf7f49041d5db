/**
 * The progress columns a new event row starts with, shared by the SQLite and the PostgreSQL
 * backends: queued for the worker, or already finished by a direct-mode delivery.
 *
 * @module
 */
import type { EventStatus } from "./_records.ts";

/** The progress columns of a new event row; times in milliseconds since the epoch. */
export interface Progress {
  status: EventStatus;
  attempts: number;
  nextAttemptAtMs: number | null;
  partsSent: number;
  lastError: string | null;
  updatedAtMs: number;
}

/**
 * The progress of an accepted agent-mode event: queued, due at once, with no attempt yet.
 * @param nowMs when the event came in, in milliseconds since the epoch
 * @returns the progress columns
 */
export function queuedProgress(nowMs: number): Progress {
  return {
    status: "queued",
    attempts: 0,
    nextAttemptAtMs: nowMs,
    partsSent: 0,
    lastError: null,
    updatedAtMs: nowMs,
  };
}

/**
 * The progress of a direct-mode delivery recorded once it ended: its one attempt made,
 * delivered or failed, never due again.
 * @param outcome whether every part got out, and how many did
 * @param options the attempt's error (null when delivered) and when it ended, in milliseconds
 * @returns the progress columns
 */
export function finishedProgress(
  outcome: { delivered: boolean; partsSent: number },
  options: { lastError: string | null; nowMs: number },
): Progress {
  return {
    status: outcome.delivered ? "delivered" : "failed",
    attempts: 1,
    nextAttemptAtMs: null,
    partsSent: outcome.partsSent,
    lastError: options.lastError,
    updatedAtMs: options.nowMs,
  };
}
