/**
 * How the dashboard shows an event's fields (docs/dashboard.md): times in UTC, durations as
 * people read them, and the summary of an event that the events page, its live updates and
 * `GET /api/events` share, so a row drawn by the browser reads as one drawn by the server.
 *
 * @module
 */
import type { Attempt, EventStatus, StoredEvent } from "../../lib/state/mod.ts";

/** The statuses an event can have, in the order of its life. */
export const STATUSES: readonly EventStatus[] = ["queued", "running", "delivered", "failed"];

/**
 * A time as the pages show it: `2026-05-01 12:00:03` (UTC).
 * @param ms milliseconds since the epoch
 * @returns the text; `-` for a time past what a Date holds
 */
export function utcTime(ms: number): string {
  return Math.abs(ms) > 8.64e15 ? "-" : new Date(ms).toISOString().replace("T", " ").slice(0, 19);
}

/**
 * A duration as people read it: `420 ms`, `3.2 s`, `12 min`, `5.0 h`.
 * @param ms milliseconds (negative ones, from a clock set back, show as 0 ms)
 */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/**
 * How long a finished event took: from when it was received, or for a replayed event from its
 * replay, to its outcome (as `agent webhook events` counts it).
 * @returns milliseconds; null while the event is queued or running
 */
export function tookMs(event: StoredEvent): number | null {
  if (event.status !== "delivered" && event.status !== "failed") return null;
  return event.updatedAtMs - (event.replayedAtMs ?? event.receivedAtMs);
}

/**
 * An event as the events page lists it, the live updates send it and `GET /api/events`
 * answers it: the fields of the listing, both as values and as the page shows them. Neither
 * the payload nor the prompt nor the answer: they are on the event's own page.
 * @param event the stored event
 * @returns snake_case fields; `received` and `took` as shown (UTC, `3.2 s`, `-`)
 */
export function eventSummary(event: StoredEvent) {
  const took = tookMs(event);
  return {
    id: event.id,
    subscription: event.subscription,
    event: event.eventLabel,
    delivery_id: event.deliveryId,
    mode: event.mode,
    status: event.status,
    attempts: event.attempts,
    received_at: new Date(event.receivedAtMs).toISOString(),
    received: utcTime(event.receivedAtMs),
    took_ms: took,
    took: took === null ? "-" : duration(took),
    last_error: event.lastError,
    updated_at_ms: event.updatedAtMs,
  };
}

/** {@link eventSummary}'s shape. */
export type EventSummary = ReturnType<typeof eventSummary>;

/** An attempt with the series it belongs to: a replay starts a new one, from attempt 1. */
export type NumberedAttempt = Attempt & { series: number };

/**
 * Numbers each attempt's series, from 1, as `agent webhook events --json` does.
 * @param attempts an event's attempts, oldest first
 */
export function withSeries(attempts: Attempt[]): NumberedAttempt[] {
  let series = 0;
  return attempts.map((attempt, i) => {
    if (i === 0 || attempt.attempt <= attempts[i - 1].attempt) series += 1;
    return { ...attempt, series };
  });
}
