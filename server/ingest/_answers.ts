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
 * How the answers to a dispatched event name it (docs/http.md), as Hermes Agent's webhook
 * platform does, so that senders and tools written against it read them alike.
 */
export interface EventNames {
  /** The event type as the sender gave it: `X-GitHub-Event`'s `pull_request`. */
  event: string;
  /** The payload's `action` (`opened`), when it has one. */
  action?: string;
  /**
   * The type the route's filter let through: `pull_request.opened` or `pull_request`, as the
   * filter names it; the event's label (`pull_request.opened`) when the route has no filter.
   */
  eventType: string;
}

/** The answer fields of {@link EventNames}: `event`, `action` when there is one, `event_type`. */
export function eventFields({ event, action, eventType }: EventNames): Json {
  return { event, ...(action === undefined ? {} : { action }), event_type: eventType };
}

/**
 * The answer to an event made durable for the worker.
 * @param accepted the subscription's name, how the event is named, its delivery id and the id
 *   of the stored event
 * @returns 202 `{"status":"accepted","route","subscription","event","action","event_type",
 *   "delivery_id","event_id"}`; `route` is the subscription's name, as Hermes calls it
 * @example
 * ```ts
 * accepted({
 *   subscription: "gh",
 *   names: { event: "pull_request", action: "opened", eventType: "pull_request.opened" },
 *   deliveryId: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
 *   eventId: "0192…",
 * });
 * ```
 */
export function accepted(
  { subscription, names, deliveryId, eventId }: {
    subscription: string;
    names: EventNames;
    deliveryId: string;
    eventId: string;
  },
): Response {
  return answer(202, {
    status: "accepted",
    route: subscription,
    subscription,
    ...eventFields(names),
    delivery_id: deliveryId,
    event_id: eventId,
  });
}

/**
 * The answer to a direct-delivery message the target took.
 * @param delivered the subscription's name, how the event is named, the target that sent it
 *   (`telegram`; for `origin`, the one it resolved to), the delivery id and the id of the
 *   stored record (null when the state database could not take it yet)
 * @returns 200 `{"status":"delivered","route","subscription","event","action","event_type",
 *   "target","delivery_id","event_id"}`
 */
export function delivered(
  { subscription, names, target, deliveryId, eventId }: {
    subscription: string;
    names: EventNames;
    target: string;
    deliveryId: string;
    eventId: string | null;
  },
): Response {
  return answer(200, {
    status: "delivered",
    route: subscription,
    subscription,
    ...eventFields(names),
    target,
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
