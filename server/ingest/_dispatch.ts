/**
 * The last steps of `POST /webhooks/<name>` (docs/http.md), once the request is authentic and
 * parsed: GitHub's `ping` and Slack's URL check, the event filter, the route's transform
 * (`_transform.ts`), then dedupe and dispatch: the event is persisted for the worker (202), or
 * delivered while the sender waits (direct mode, `_direct.ts`). A state database that cannot
 * take the event is refused with 503 (see `refusalOf`).
 *
 * @module
 */
import { lineTemplate, writeLine } from "../../lib/log.ts";
import {
  type EventInfo,
  eventInfo,
  eventLabel,
  matchedEventType,
} from "../../lib/subscriptions/event_info.ts";
import { dispatchFor } from "../../lib/subscriptions/routes.ts";
import { failedFilter } from "../../lib/subscriptions/filter.ts";
import type { NewEvent } from "../../lib/state/mod.ts";
import type { Route } from "../../lib/subscriptions/mod.ts";
import { isOwnComment, postsComments } from "../../lib/targets/own_comments.ts";
import type { IngestDeps } from "./mod.ts";
import { deliverNow } from "./_direct.ts";
import { pendingTransform, transformed } from "./_transform.ts";
import { redactedHeaders } from "./_auth.ts";
import {
  accepted,
  duplicate,
  type EventNames,
  ignored,
  log,
  pong,
  slackChallenge,
} from "./_answers.ts";
import type { SchemeName } from "../../lib/signatures/mod.ts";

/** The lines written on every request they answer, read once (see `writeLine`). */
const ACCEPTED = lineTemplate("accepted {subscription} {event}");
const IGNORED = lineTemplate("ignored {subscription}: event {event} not in filter");
const OWN_COMMENT = lineTemplate("ignored {subscription}: event {event} is about its own comment");
const FILTERED = lineTemplate(
  "ignored {subscription}: event {event} did not pass filter {filter} ({expression}): {reason}",
);

/** A request that passed the auth, rate and parse steps. */
export interface Authentic {
  /** The route the request is authentic for. */
  route: Route;
  /** The scheme that verified it. */
  scheme: SchemeName;
  headers: Headers;
  /** The parsed body, and its JSON text. */
  payload: { value: unknown; json: string };
}

/** What the steps after parsing know of the event. */
interface Received {
  route: Route;
  info: EventInfo;
  /** The event's label (`eventLabel(info)`, e.g. `issues.opened`). */
  event: string;
  payload: unknown;
}

/**
 * The ping, filter, transform, dedupe and dispatch steps, once the request is authentic and
 * parsed.
 * @param deps the pipeline's collaborators
 * @param authentic the route, scheme, headers and parsed payload
 * @returns 200 `pong`, a Slack challenge, `ignored` or `duplicate`; 202 `accepted`; direct
 *   mode's 200, 409 or 502
 * @throws StoreUnavailableError when the store cannot take or read the event (answered 503);
 *   what else the store throws (answered 500)
 */
export async function dispatch(deps: IngestDeps, authentic: Authentic): Promise<Response> {
  const { route, scheme, headers, payload: { value: payload, json } } = authentic;
  const info = eventInfo(headers, payload, deps.newId, senderScheme(scheme, payload));
  const received: Received = { route, info, event: eventLabel(info), payload };
  const answered = answerWithoutEvent(received, scheme);
  if (answered) return answered;
  const eventType = filter(received, headers);
  if (typeof eventType !== "string") {
    deps.metrics?.event(route.name, "ignored");
    return eventType;
  }
  let newEvent = buildEvent(received, { json, receivedAtMs: deps.now(), headers, scheme });
  // Only a route with a transform pays for this step (docs/subscriptions.md#transforms).
  if (route.transform) {
    // A sender's retry is answered before its program runs again.
    if (await acceptedBefore(deps, newEvent)) {
      deps.metrics?.event(route.name, "duplicate");
      return duplicate(route.name, newEvent.eventLabel, newEvent.deliveryId);
    }
    const result = await transformed(newEvent, deps.transforms);
    if (result === "skip") {
      deps.metrics?.event(route.name, "ignored");
      return ignored(received.event, "transform");
    }
    newEvent = result;
  }
  const { subscription, eventLabel: event, deliveryId } = newEvent;
  const names: EventNames = { event: info.type, action: info.action, eventType };
  // Direct mode reads the store before it sends anything (is this delivery id a duplicate,
  // how many parts went out already): a store it cannot read is a 503 there too. A message
  // whose transform failed has nothing to send yet: it is accepted for the worker.
  if (route.deliver_only && !pendingTransform(newEvent)) {
    return deliverNow(deps, { event: newEvent, payload, names });
  }
  const result = await deps.store.accept(newEvent);
  if (result.status === "duplicate") {
    deps.metrics?.event(subscription, "duplicate");
    return duplicate(subscription, event, deliveryId);
  }
  deps.onAccepted();
  deps.metrics?.event(subscription, "accepted");
  writeLine(log, "info", ACCEPTED, {
    subscription,
    event,
    delivery_id: deliveryId,
    event_id: result.eventId,
  });
  return accepted({ subscription, names, deliveryId, eventId: result.eventId });
}

/**
 * Whether the event's delivery id was taken already, so that `accept` (or direct mode's send)
 * would answer it as a duplicate: its key is held now, and for a direct message by one that is
 * not being sent (a replay under way is answered by `deliverNow`, 409).
 */
async function acceptedBefore(deps: IngestDeps, event: NewEvent): Promise<boolean> {
  if (!event.dedupe) return false;
  const { subscription, deliveryId, receivedAtMs } = event;
  const holder = await deps.store.keyHolder(subscription, deliveryId, receivedAtMs);
  if (holder === null) return false;
  if (event.mode === "agent") return true;
  const held = await deps.store.getEvent(holder);
  return held !== null && held.status !== "queued" && held.status !== "running";
}

/** GitHub's `ping` and Slack's URL check: answered, never dispatched; `undefined` for events. */
function answerWithoutEvent(
  { route, info, payload }: Received,
  scheme: SchemeName,
): Response | undefined {
  const subscription = route.name;
  if (info.source === "github" && info.type === "ping") {
    log.info("ping {subscription}", { subscription, delivery_id: info.deliveryId });
    return pong();
  }
  const fields = payload as { type?: unknown; challenge?: unknown } | null;
  const challenge = scheme === "slack" && typeof fields === "object" && fields !== null &&
      fields.type === "url_verification"
    ? fields.challenge
    : undefined;
  if (typeof challenge === "string") {
    // Slack's Events API checks the URL with a signed challenge to echo back, not an event.
    // https://api.slack.com/events/url_verification
    log.info("url_verification {subscription}", { subscription });
    return slackChallenge(challenge);
  }
  return undefined;
}

/**
 * The "filter" step: `ignored` for an event not in the route's filter, for which one of its
 * `filters` does not hold (docs/subscriptions.md#filters), or about its own comment; else the
 * type the filter let it through as (see `matchedEventType`).
 */
function filter({ route, info, event, payload }: Received, headers: Headers): Response | string {
  const subscription = route.name;
  const eventType = matchedEventType(route.events, info);
  if (eventType === undefined) {
    writeLine(log, "info", IGNORED, {
      subscription,
      event,
      events: route.events?.join(","),
    });
    return ignored(event);
  }
  const failed = failedFilter(route.filters, { payload, headers });
  if (failed !== undefined) {
    const { index, expression, reason } = failed;
    writeLine(log, "info", FILTERED, { subscription, event, filter: index, expression, reason });
    return ignored(event, "filter");
  }
  if (postsComments(route.deliver ?? "log") && isOwnComment(payload)) {
    writeLine(log, "info", OWN_COMMENT, { subscription, event });
    return ignored(event, "the gateway's own comment");
  }
  return eventType;
}

/**
 * The scheme whose rules give an event's id, type and source. Generic V2 signs `<ts>.<body>`,
 * exactly what Stripe signs: on a subscription not pinned to Stripe, a Stripe request re-sent
 * as generic V2 (with a new `Idempotency-Key`, or an `X-GitHub-Event` that renames it) passes.
 * A Stripe event (`"object": "event"`, an `evt_` id) that generic V2 verified is read as
 * Stripe's, from its signed payload, so such a copy is a duplicate of the original.
 */
function senderScheme(scheme: SchemeName, payload: unknown): SchemeName {
  if (scheme !== "generic" || typeof payload !== "object" || payload === null) return scheme;
  const { object, id } = payload as { object?: unknown; id?: unknown };
  return object === "event" && typeof id === "string" && id.startsWith("evt_") ? "stripe" : scheme;
}

/**
 * The event to store: the request's facts and what the route does with it.
 * @param received the route, the event's facts and label, and the parsed payload
 * @param request the payload's JSON text, when the request was received (ms since the epoch),
 *   its headers (stored redacted) and the scheme that verified it
 */
function buildEvent(
  { route, info, event, payload }: Received,
  { json, receivedAtMs, headers, scheme }: {
    json: string;
    receivedAtMs: number;
    headers: Headers;
    scheme: SchemeName;
  },
): NewEvent {
  const handling = dispatchFor(route, payload, {
    event,
    subscription: route.name,
    deliveryId: info.deliveryId,
  }, json);
  return {
    subscription: route.name,
    eventLabel: event,
    deliveryId: info.deliveryId,
    dedupe: !info.generatedDeliveryId,
    source: info.source,
    payload: json,
    receivedAtMs,
    headers: redactedHeaders(headers),
    scheme,
    ...handling,
  };
}
