/**
 * The JSON answers of the ingest pipeline and the log line that goes with each refusal.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { lineTemplate, writeLine } from "../lib/log.ts";
import { createRejectionLogBudget, type RejectionLogLimits } from "./_rejection_log.ts";

/** The ingest pipeline's logger: one line per decision. */
export const log = getLogger(["agent", "ingest"]);

type Json = Record<string, unknown>;

let rejections = createRejectionLogBudget();

/**
 * Sets how many refusals the log records (see `_rejection_log.ts`): a gateway's start does, with
 * its limits; tests pass small ones.
 * @param limits lines per window and its length in ms; the defaults when omitted
 */
export function limitRejectionLog(limits?: RejectionLogLimits): void {
  rejections = createRejectionLogBudget(limits);
}

/** Writes how many refusals were left out of the log, if any (at shutdown). */
export function flushRejectionLog(): void {
  const line = rejections.flush();
  if (line !== undefined) log.warn(line);
}

/**
 * Writes a refusal's log line through `write`, unless the log already has its share of
 * refusals; writes the budget's notice first, if it has one.
 * @param status the refusal's HTTP status, counted when the line is left out
 * @param write writes the line
 */
export function logRejection(status: number, write: () => void): void {
  const verdict = rejections.take(status);
  if (verdict.notice !== undefined) log.warn(verdict.notice);
  if (verdict.log) write();
}

/** The lines written on every request, read once (see `writeLine`). */
export const REJECTED = lineTemplate("rejected {subscription}: {reason}");
const DUPLICATE = lineTemplate("duplicate {subscription} {event}");

/** A JSON answer with optional extra headers. */
export function answer(status: number, body: Json, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** A refusal: `{"error": ...}` with its status, and a warning line in the log. */
export function reject(
  name: string,
  status: number,
  error: string,
  headers?: Record<string, string>,
) {
  // The name comes from the URL: cap what an unknown one can write to the log.
  const subscription = name.length > 80 ? `${name.slice(0, 80)}…` : name;
  // A replacer function: a string would expand `$&`, `$'` and `` $` `` in the name.
  const reason = error.replace(name, () => subscription);
  logRejection(status, () => writeLine(log, "warning", REJECTED, { subscription, status, reason }));
  return answer(status, { error: reason }, headers);
}

/** The answer to a delivery id already seen, and its log line. */
export function duplicate(subscription: string, event: string, deliveryId: string): Response {
  writeLine(log, "info", DUPLICATE, { subscription, event, delivery_id: deliveryId });
  return answer(200, { status: "duplicate", delivery_id: deliveryId });
}
