/**
 * How `agent webhook events` shows events: the table for people, and the JSON fields for
 * scripts (everything but the payload, the prompt and the answers); and the pieces
 * `agent webhook show` builds on (attempt series, times, durations).
 *
 * @module
 */
import { oneTerminalLine } from "../lib/log.ts";
import type { Attempt, StoredEvent } from "../lib/state/mod.ts";

/** Longest last error the table shows, in characters. */
const ERROR_COLUMN_CHARS = 80;

/**
 * An event as `--json` shows it, with its attempts.
 * @param event the stored event
 * @param attempts its attempts, oldest first
 * @returns the fields shown to users (everything but the payload and the prompt), in
 *   snake_case with ISO times, and `attempts_detail`: each attempt with its series
 */
export function eventJson(event: StoredEvent, attempts: Attempt[]) {
  return { ...publicFields(event), attempts_detail: withSeries(attempts).map(publicAttempt) };
}

/**
 * The fields shown to users: everything but the payload, the prompt and the answer.
 * @param event the stored event
 * @returns its fields in snake_case, with ISO times
 */
export function publicFields(event: StoredEvent) {
  return {
    id: event.id,
    subscription: event.subscription,
    event: event.eventLabel,
    source: event.source,
    delivery_id: event.deliveryId,
    mode: event.mode,
    status: event.status,
    attempts: event.attempts,
    uncounted_attempts: event.uncountedAttempts,
    received_at: new Date(event.receivedAtMs).toISOString(),
    replayed_at: isoOrNull(event.replayedAtMs),
    updated_at: new Date(event.updatedAtMs).toISOString(),
    next_attempt_at: isoOrNull(event.nextAttemptAtMs),
    target: event.route.deliver,
    last_error: event.lastError,
    // The event whose agent run answered this one too (docs/subscriptions.md#coalescing).
    coalesced_into: event.coalescedInto ?? null,
  };
}

/**
 * Numbers each attempt's series, from 1: a replay starts a new one, where attempt numbers begin
 * again at 1.
 * @param attempts an event's attempts, oldest first
 * @returns the attempts, each with its `series`
 */
export function withSeries(attempts: Attempt[]): (Attempt & { series: number })[] {
  let series = 0;
  return attempts.map((attempt, i) => {
    if (i === 0 || attempt.attempt <= attempts[i - 1].attempt) series += 1;
    return { ...attempt, series };
  });
}

/**
 * An attempt as the JSON shows it: snake_case names and ISO times, as the event's own, with
 * the agent run that answered in it (provider, model, tokens, duration), if one did.
 * @param attempt the attempt and its series
 * @returns its fields, without the answer
 */
export function publicAttempt(attempt: Attempt & { series: number }) {
  const { run } = attempt;
  return {
    series: attempt.series,
    attempt: attempt.attempt,
    step: attempt.step,
    started_at: new Date(attempt.startedAtMs).toISOString(),
    finished_at: isoOrNull(attempt.finishedAtMs),
    error: attempt.error,
    agent_run: run === null ? null : {
      provider: run.provider,
      model: run.model,
      prompt_tokens: run.promptTokens,
      completion_tokens: run.completionTokens,
      duration_ms: run.durationMs,
    },
  };
}

/**
 * An ISO time, or null for none (or for a time past the year 275760, which has no ISO form).
 * @param ms ms since the epoch, or null
 */
export function isoOrNull(ms: number | null): string | null {
  return ms === null || Math.abs(ms) > 8.64e15 ? null : new Date(ms).toISOString();
}

/**
 * The human listing, one line per event. TOOK is from when it was received, or for a replayed
 * event from its replay (not the days before, when it first came in), to its outcome.
 * @param events the events, newest first
 * @returns the table, a header line then one line per event, columns aligned
 */
export function eventTable(events: StoredEvent[]): string {
  const header = [
    "ID",
    "SUBSCRIPTION",
    "EVENT",
    "DELIVERY ID",
    "STATUS",
    "TRIES",
    "RECEIVED (UTC)",
    "TOOK",
    "LAST ERROR",
  ];
  // Delivery ids, event types and errors come from senders, platforms and agents: escape
  // what a terminal would run (see oneTerminalLine). `--json` is safe as it is.
  const rows = events.map((e) => [
    e.id,
    e.subscription,
    oneTerminalLine(e.eventLabel),
    cut(oneTerminalLine(e.deliveryId), 24),
    // A folded event shows the run that answers it: its own attempts stay 0.
    e.coalescedInto ? `${e.status}, run of ${e.coalescedInto}` : e.status,
    String(e.attempts),
    utcTime(e.receivedAtMs),
    e.status === "delivered" || e.status === "failed"
      ? duration(e.updatedAtMs - (e.replayedAtMs ?? e.receivedAtMs))
      : "-",
    cut(oneTerminalLine(e.lastError ?? "").replace(/\s+/g, " "), ERROR_COLUMN_CHARS),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  return [header, ...rows]
    .map((row) => row.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd())
    .join("\n");
}

/**
 * A time as the listings show it, to the second, in UTC: `2026-03-01 10:00:00`.
 * @param ms ms since the epoch
 */
export function utcTime(ms: number): string {
  return new Date(ms).toISOString().replace("T", " ").slice(0, 19);
}

/**
 * `text`, or its first `maxChars - 1` characters and "…" when it is longer.
 * @param text any text
 * @param maxChars the most characters to keep, the "…" included
 */
export function cut(text: string, maxChars: number): string {
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}

/**
 * A duration as people read it: `420 ms`, `3.2 s`, `12 min`.
 * @param ms the duration, in ms
 */
export function duration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60_000)} min`;
}
