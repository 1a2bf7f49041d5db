/**
 * The mapping from database rows to records, shared by the SQLite and the PostgreSQL backends,
 * whose `events`, `attempts` and `parts` tables have the same columns, and whose activity
 * queries return the same counts per minute.
 *
 * @module
 */
import type {
  Attempt,
  EventSource,
  EventStatus,
  PartReceipt,
  SessionTurn,
  StoredEvent,
} from "./_records.ts";
import type { ActivityMinute } from "./_reads.ts";
import type { RouteSnapshot } from "./_route_snapshot.ts";

/**
 * A row as a driver returns it: `node:sqlite` gives INTEGER columns as numbers, the PostgreSQL
 * client gives `bigint` columns as strings, so each column goes through `Number` or `String`.
 */
export type Row = Record<string, unknown>;

/**
 * Turns an `events` row into a record.
 * @param row the row; a column missing from a table of an older version reads as NULL
 * @returns the stored event
 */
export function rowToEvent(row: Row): StoredEvent {
  return {
    id: String(row.id),
    subscription: String(row.subscription),
    // The column keeps its first name; it has always held the label.
    eventLabel: String(row.event_type),
    deliveryId: String(row.delivery_id),
    // SQLite stores a boolean as 1 or 0, PostgreSQL as a boolean.
    dedupe: row.dedupe === 1 || row.dedupe === true,
    source: String(row.source) as EventSource,
    mode: row.mode === "direct" ? "direct" : "agent",
    payload: String(row.payload),
    prompt: String(row.prompt),
    route: JSON.parse(String(row.route)) as RouteSnapshot,
    receivedAtMs: Number(row.received_at),
    status: String(row.status) as EventStatus,
    attempts: Number(row.attempts),
    nextAttemptAtMs: nullableNumber(row.next_attempt_at),
    response: nullableText(row.response),
    partsSent: Number(row.parts_sent),
    uncountedAttempts: Number(row.uncounted_attempts ?? 0),
    lastError: nullableText(row.last_error),
    updatedAtMs: Number(row.updated_at),
    replayedAtMs: nullableNumber(row.replayed_at),
    ...(typeof row.headers === "string"
      ? { headers: JSON.parse(row.headers) as Record<string, string> }
      : {}),
    ...(typeof row.scheme === "string" ? { scheme: row.scheme } : {}),
    ...(typeof row.session_key === "string" ? { sessionKey: row.session_key } : {}),
    ...(typeof row.coalesced_into === "string" ? { coalescedInto: row.coalesced_into } : {}),
    ...(typeof row.transformed === "string" ? { transformed: row.transformed } : {}),
  };
}

/**
 * Turns an `attempts` row into a record.
 * @param row the row
 * @returns the attempt
 */
export function rowToAttempt(row: Row): Attempt {
  return {
    eventId: String(row.event_id),
    attempt: Number(row.attempt),
    startedAtMs: Number(row.started_at),
    finishedAtMs: nullableNumber(row.finished_at),
    step: row.step === "delivery" ? "delivery" : "agent",
    error: nullableText(row.error),
    run: typeof row.provider === "string"
      ? {
        provider: row.provider,
        model: nullableText(row.model),
        promptTokens: nullableNumber(row.prompt_tokens),
        completionTokens: nullableNumber(row.completion_tokens),
        durationMs: Number(row.run_ms ?? 0),
      }
      : null,
    answer: nullableText(row.answer),
  };
}

/**
 * Turns a `parts` row into a record.
 * @param row the row
 * @returns the part's receipt
 */
export function rowToPart(row: Row): PartReceipt {
  return {
    part: Number(row.part),
    parts: Number(row.parts),
    target: String(row.target),
    chat: String(row.chat),
    messageId: nullableText(row.message_id),
    url: nullableText(row.url),
    sentAtMs: Number(row.sent_at),
  };
}

/**
 * Turns a `session_turns` row into a record.
 * @param row the row as the backend's driver returns it
 * @returns the turn: its event, prompt, answer and time
 */
export function rowToTurn(row: Row): SessionTurn {
  return {
    eventId: String(row.event_id),
    prompt: String(row.prompt),
    answer: String(row.answer),
    atMs: Number(row.created_at),
  };
}

/**
 * Folds the counts per minute of accepted and of ended events into the activity.
 * @param accepted rows of `minute` (ms since the epoch, a whole minute) and `n`
 * @param ended rows of `minute`, `status` (`delivered` or `failed`) and `n`
 * @returns one entry per minute that has any count, oldest minute first
 */
export function rowsToActivity(accepted: Row[], ended: Row[]): ActivityMinute[] {
  const minutes = new Map<number, ActivityMinute>();
  const minute = (ms: number) => {
    let entry = minutes.get(ms);
    if (!entry) {
      entry = { minuteMs: ms, accepted: 0, delivered: 0, failed: 0 };
      minutes.set(ms, entry);
    }
    return entry;
  };
  for (const row of accepted) minute(Number(row.minute)).accepted = Number(row.n);
  for (const row of ended) {
    minute(Number(row.minute))[row.status === "delivered" ? "delivered" : "failed"] = Number(row.n);
  }
  return [...minutes.values()].sort((a, b) => a.minuteMs - b.minuteMs);
}

/** A column that may be NULL (or missing, in a row of an older table), as text. */
function nullableText(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

/** A column that may be NULL (or missing), as a number. */
function nullableNumber(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}
