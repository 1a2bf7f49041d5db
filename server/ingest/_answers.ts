/**
 * The JSON answers of `/webhooks/<name>` that are not refusals (accepted, duplicate, ignored,
 * pong), and the ingest pipeline's logger. Refusals are answered by `answerRefusal` in
 * `_refusal.ts`, through {@link answer}.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { lineTemplate, writeLine } from "../../lib/log.ts";

/** The ingest pipeline's logger: one line per decision. */
export const log = getLogger(["agent", "ingest"]);

type Json = Record<string, unknown>;

/** Seconds a sender is asked to wait after a 503 (the state database, or too many bodies). */
export const STORE_RETRY_AFTER_SECONDS = 5;

/** The line written on every duplicate, read once (see `writeLine`). */
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
 * The answer to an event made durable for the worker.
 * @param accepted the subscription's name, the event's label, its delivery id and the id of the
 *   stored event
 * @returns 202 `{"status":"accepted",…}`
 */
export function accepted(
  { subscription, event, deliveryId, eventId }: {
    subscription: string;
    event: string;
    deliveryId: string;
    eventId: string;
  },
): Response {
  return answer(202, {
    status: "accepted",
    subscription,
    event,
    delivery_id: deliveryId,
    event_id: eventId,
  });
}

/**
 * The answer to an event the route does not take.
 * @param event the event's label (`issues.opened`)
 * @param reason why, when it is not the route's event filter
 * @returns 200 `{"status":"ignored","event":…}`, with `reason` when given
 */
export function ignored(event: string, reason?: string): Response {
  return answer(
    200,
    reason === undefined ? { status: "ignored", event } : { status: "ignored", event, reason },
  );
}

/**
 * The answer to GitHub's `ping`.
 * @returns 200 `{"status":"pong"}`
 */
export function pong(): Response {
  return answer(200, { status: "pong" });
}

/**
 * The answer to Slack's URL check: its challenge echoed back.
 * Source: https://api.slack.com/events/url_verification
 * @returns 200 `{"challenge":…}`
 */
export function slackChallenge(challenge: string): Response {
  return answer(200, { challenge });
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
