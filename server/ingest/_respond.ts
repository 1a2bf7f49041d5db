/**
 * The JSON answers of the ingest pipeline and the log line that goes with each refusal.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { lineTemplate, writeLine } from "../../lib/log.ts";
import { NAME_PATTERN } from "../../lib/subscriptions/mod.ts";
import type { RefusalLog } from "./_refusal_log.ts";

/** The ingest pipeline's logger: one line per decision. */
export const log = getLogger(["agent", "ingest"]);

type Json = Record<string, unknown>;

/** Seconds a sender is asked to wait after a 503 (the state database, or too many bodies). */
export const STORE_RETRY_AFTER_SECONDS = 5;

/** The lines written on every request, read once (see `writeLine`). */
export const REJECTED = lineTemplate("rejected {subscription}: {reason}");
const DUPLICATE = lineTemplate("duplicate {subscription} {event}");

/**
 * A JSON answer with optional extra headers.
 * @param status the HTTP status
 * @param body what to send, as JSON
 * @param headers more headers (`Retry-After`), besides `content-type: application/json`
 * @returns the response
 */
export function answer(status: number, body: Json, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/**
 * Writes a refusal's log line through `write`, as far as `refusals` lets refusals into the log.
 * @param refusals the gateway's refusal log; without one (a pipeline built by hand in a test),
 *   every line is written
 * @param subscription the pool the refusal counts toward (see `RefusalLog.refused`)
 */
export function logRefusal(
  refusals: RefusalLog | undefined,
  subscription: string | undefined,
  status: number,
  write: () => void,
): void {
  if (refusals === undefined) write();
  else refusals.refused(subscription, status, write);
}

/** A refusal to answer with, and where its log line counts. */
export interface Refusal {
  /**
   * The subscription name of the URL; a 404 or 405 counts toward the refusals that name no
   * subscription, others toward that subscription's.
   */
  name: string;
  /** The HTTP status (4xx, or 503 for too many bodies at once). */
  status: number;
  /** The message of `{"error": ...}`, also the log line's reason. */
  error: string;
  /** More headers (`Allow`, `Retry-After`), besides `content-type`. */
  headers?: Record<string, string>;
}

/**
 * A refusal: `{"error": ...}` with its status, and a warning line in the log (see
 * {@link logRefusal}).
 * @param refusals the gateway's refusal log, if any
 * @param refusal the status, message and headers to answer with, and the URL's name
 * @returns the JSON answer
 */
export function reject(
  refusals: RefusalLog | undefined,
  { name, status, error, headers }: Refusal,
): Response {
  // The name comes from the URL: cap what an unknown one can write to the log.
  const subscription = name.length > 80 ? `${name.slice(0, 80)}…` : name;
  // A replacer function: a string would expand `$&`, `$'` and `` $` `` in the name.
  const reason = error.replace(name, () => subscription);
  const pool = status === 404 || status === 405 ? undefined : name;
  logRefusal(refusals, pool, status, () => {
    // A name that is not a subscription name is quoted: `zz 2026-… INFO ingest accepted gh`
    // would read as another line's words to whoever greps the log.
    const shown = NAME_PATTERN.test(name) ? subscription : JSON.stringify(subscription);
    writeLine(log, "warning", REJECTED, {
      subscription: shown,
      status,
      reason: error.replace(name, () => shown),
    });
  });
  return answer(status, { error: reason }, headers);
}

/**
 * The answer to an unexpected error: 500 `{"error":"internal error"}`, which says nothing of
 * the error itself.
 * @returns the JSON answer
 */
export function internalErrorAnswer(): Response {
  return answer(500, { error: "internal error" });
}

/**
 * The answer to a delivery id already seen, and its log line.
 * @param subscription the subscription's name
 * @param event the event's label, for the log line (`issues.opened`)
 * @param deliveryId the delivery id seen before
 * @returns 200 `{"status":"duplicate","delivery_id":…}`
 */
export function duplicate(subscription: string, event: string, deliveryId: string): Response {
  writeLine(log, "info", DUPLICATE, { subscription, event, delivery_id: deliveryId });
  return answer(200, { status: "duplicate", delivery_id: deliveryId });
}
