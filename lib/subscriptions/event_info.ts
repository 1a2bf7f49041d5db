/**
 * Who sent a webhook, what kind of event it is and which delivery it belongs to
 * (docs/http.md): the inputs of the event filter, the deduplication key and the log lines.
 *
 * Every value here comes from the sender, so each candidate (header or payload field) is only
 * used when it is a string of 1 to {@link MAX_ID_CHARS} characters without control characters;
 * otherwise it is ignored as if absent and the next candidate is tried. An over-long delivery id
 * is not truncated, because two different ids sharing a prefix would then be taken as duplicates;
 * when no candidate is usable a fresh id is generated and no deduplication happens.
 *
 * Sources:
 * GitHub https://docs.github.com/en/webhooks/webhook-events-and-payloads#delivery-headers,
 * GitLab https://docs.gitlab.com/user/project/integrations/webhook_events/,
 * Stripe https://docs.stripe.com/api/events/object,
 * Standard Webhooks https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md.
 *
 * @module
 */
import { asRecord } from "./payload.ts";

/** Who sent a request, told by its headers. */
export type EventSource = "github" | "gitlab" | "stripe" | "standard" | "other";

/** What the gateway knows about one received event. */
export interface EventInfo {
  /** Event type: `issues`, `pipeline`, `payment_intent.succeeded`, or `unknown`. */
  type: string;
  /** The payload's string `action` (`opened`), when it has one. */
  action?: string;
  /** The sender's delivery id, or a generated one (see {@link generatedDeliveryId}). */
  deliveryId: string;
  /** True when the sender gave no usable id, so this delivery cannot be deduplicated. */
  generatedDeliveryId: boolean;
  /** Who sent it. */
  source: EventSource;
}

/**
 * Longest usable event type, action or delivery id, in characters. As long as the longest
 * Standard Webhooks id the signature check takes, so that a signed id is always the delivery id.
 */
export const MAX_ID_CHARS = 256;

/** Delivery id headers, most specific first; Stripe's payload `id` comes after `svix-id`. */
const ID_HEADERS_BEFORE_STRIPE = [
  "X-GitHub-Delivery",
  "X-Gitlab-Event-UUID",
  "Idempotency-Key",
  "webhook-id",
  "svix-id",
];
const ID_HEADERS_AFTER_STRIPE = ["X-Shopify-Webhook-Id", "Linear-Delivery", "X-Request-ID"];
const PAYLOAD_TYPE_FIELDS = ["type", "event_type", "event"];
const CONTROL_CHAR = /\p{Cc}/u; // C0, DEL and C1

/**
 * Reads the event type, action, delivery id and source of a request (docs/http.md).
 *
 * Type: `X-GitHub-Event`; with `X-Gitlab-Event`, the payload's `object_kind`, else the header
 * lowercased without ` Hook`, spaces made underscores (`Merge Request Hook` → `merge_request`,
 * the spelling of `object_kind`); then, for a request Shopify's signature authenticated, its
 * `X-Shopify-Topic` (`orders/create`); then the payload's `type`, `event_type` or `event` string;
 * else `unknown`.
 *
 * When the scheme that authenticated the request signs an id of its own (Standard Webhooks'
 * `webhook-id`, Stripe's event `id`, Slack's `event_id`), that id is the delivery id and the
 * unsigned headers are ignored: an exact copy of a signed request with an `Idempotency-Key`
 * added is then still a duplicate. Likewise a Stripe or Standard Webhooks request takes its type
 * from its signed payload and its source from its scheme, whatever `X-GitHub-Event` says.
 *
 * @param headers The request headers.
 * @param payload The parsed JSON payload (any JSON value).
 * @param newId Makes a delivery id when the sender gave none (e.g. `crypto.randomUUID`).
 * @param scheme The signature scheme that authenticated the request, when known.
 * @returns The event's description; `generatedDeliveryId` tells whether `newId` was used.
 * @example
 * ```ts
 * const headers = new Headers({ "X-GitHub-Event": "issues", "X-GitHub-Delivery": "72d3…" });
 * eventInfo(headers, { action: "opened" }, crypto.randomUUID, "github");
 * // { type: "issues", action: "opened", deliveryId: "72d3…", generatedDeliveryId: false,
 * //   source: "github" }
 * ```
 */
export function eventInfo(
  headers: Headers,
  payload: unknown,
  newId: () => string,
  scheme?: string,
): EventInfo {
  const fields = asRecord(payload) ?? {};
  const signed = SIGNED_SOURCES[scheme ?? ""];
  const type = signed ? payloadType(fields) : eventType(headers, fields, scheme);
  const action = boundedToken(own(fields, "action"));
  const given = signedId(scheme, headers, fields) ?? deliveryId(headers, fields);
  return {
    type,
    ...(action === undefined ? {} : { action }),
    deliveryId: given ?? newId(),
    generatedDeliveryId: given === undefined,
    source: signed ?? eventSource(headers),
  };
}

/** Schemes whose signature covers who sent the event and what it is. */
const SIGNED_SOURCES: Record<string, EventSource | undefined> = {
  stripe: "stripe",
  standard: "standard",
};

/** The id the authenticating scheme signed, or undefined when it signs none. */
function signedId(
  scheme: string | undefined,
  headers: Headers,
  fields: Record<string, unknown>,
): string | undefined {
  switch (scheme) {
    case "standard":
      // The family the verifier checked: webhook- when its signature header is there.
      return boundedToken(headers.get(headers.has("webhook-signature") ? "webhook-id" : "svix-id"));
    case "stripe":
      return boundedToken(own(fields, "id"));
    case "slack":
      return boundedToken(own(fields, "event_id"));
    default:
      return undefined;
  }
}

/**
 * Tells whether an event passes a subscription's `events` filter.
 *
 * @param filter The subscription's event names; absent or empty lets every event through.
 * @param info The event's type and action.
 * @returns True when a name equals the type (`issues`), or `<type>.<action>` (`issues.opened`)
 *   for an event with an action. Case-sensitive, as the senders spell them.
 */
export function matchesEvents(
  filter: readonly string[] | undefined,
  info: Pick<EventInfo, "type" | "action">,
): boolean {
  return matchedEventType(filter, info) !== undefined;
}

/**
 * The event type a subscription's `events` filter let the event through as: the `event_type`
 * of the gateway's 202 and 200 answers (docs/http.md), as Hermes Agent's webhook platform
 * answers.
 *
 * @param filter The subscription's event names; absent or empty lets every event through.
 * @param info The event's type and action.
 * @returns The filter's name that matched, `<type>.<action>` rather than the type when it has
 *   both; the event's label ({@link eventLabel}) when there is no filter; undefined when the
 *   filter does not let the event through.
 * @example
 * ```ts
 * matchedEventType(["pull_request"], { type: "pull_request", action: "opened" }); // "pull_request"
 * matchedEventType([], { type: "pull_request", action: "opened" }); // "pull_request.opened"
 * matchedEventType(["push"], { type: "issues" }); // undefined
 * ```
 */
export function matchedEventType(
  filter: readonly string[] | undefined,
  info: Pick<EventInfo, "type" | "action">,
): string | undefined {
  const label = eventLabel(info);
  if (filter === undefined || filter.length === 0) return label;
  if (filter.includes(label)) return label;
  return filter.includes(info.type) ? info.type : undefined;
}

/**
 * Names an event for log lines and answers.
 *
 * @param info The event's type and action.
 * @returns `<type>.<action>` (`issues.opened`) when there is an action, else the type.
 */
export function eventLabel(info: Pick<EventInfo, "type" | "action">): string {
  return info.action === undefined ? info.type : `${info.type}.${info.action}`;
}

/** The type of an event whose scheme does not sign it: from the headers, else the payload. */
function eventType(
  headers: Headers,
  fields: Record<string, unknown>,
  scheme: string | undefined,
): string {
  const github = boundedToken(headers.get("X-GitHub-Event"));
  if (github !== undefined) return github;
  const gitlab = headers.get("X-Gitlab-Event");
  if (gitlab !== null) {
    const kind = boundedToken(own(fields, "object_kind")) ??
      boundedToken(gitlab.toLowerCase().replace(/ hook$/, "").trim().replaceAll(" ", "_"));
    if (kind !== undefined) return kind;
  }
  // Shopify names the event only in this header (`orders/create`): its payload is the resource.
  // Read only when Shopify's signature authenticated the request, as Stripe's payload id is.
  // https://shopify.dev/docs/apps/build/webhooks/subscribe/https
  const topic = scheme === "shopify" ? boundedToken(headers.get("X-Shopify-Topic")) : undefined;
  return topic ?? payloadType(fields);
}

/** The payload's `type`, `event_type` or `event` string, else `unknown`. */
function payloadType(fields: Record<string, unknown>): string {
  return payloadTypeField(fields)?.type ?? "unknown";
}

/**
 * The payload field that names its event type, as {@link eventInfo} reads it when no header
 * does: the first of `type`, `event_type` and `event` that holds a usable string (1 to
 * {@link MAX_ID_CHARS} characters, no control characters).
 * @param payload the parsed JSON payload
 * @returns the field and its value, or undefined when none is usable
 */
export function payloadTypeField(payload: unknown): { field: string; type: string } | undefined {
  const fields = asRecord(payload) ?? {};
  for (const field of PAYLOAD_TYPE_FIELDS) {
    const type = boundedToken(own(fields, field));
    if (type !== undefined) return { field, type };
  }
  return undefined;
}

/** The sender's delivery id, from the first usable candidate in the order above. */
function deliveryId(headers: Headers, fields: Record<string, unknown>): string | undefined {
  for (const name of ID_HEADERS_BEFORE_STRIPE) {
    const id = boundedToken(headers.get(name));
    if (id !== undefined) return id;
  }
  // A payload `id` is only an event id when Stripe signed it; elsewhere it names other things.
  if (headers.has("Stripe-Signature")) {
    const id = boundedToken(own(fields, "id"));
    if (id !== undefined) return id;
  }
  for (const name of ID_HEADERS_AFTER_STRIPE) {
    const id = boundedToken(headers.get(name));
    if (id !== undefined) return id;
  }
  return undefined;
}

/** Who sent an event whose scheme does not sign it, told by the headers each sender sets. */
function eventSource(headers: Headers): EventSource {
  if (headers.has("X-GitHub-Event")) return "github";
  if (headers.has("X-Gitlab-Event")) return "gitlab";
  if (headers.has("Stripe-Signature")) return "stripe";
  if (headers.has("webhook-id") || headers.has("svix-id")) return "standard";
  return "other";
}

/**
 * The value when it is a short, printable, non-empty string (1 to {@link MAX_ID_CHARS}
 * characters, no control characters), as every event type, action and delivery id must be;
 * otherwise undefined.
 * @param value a header value or payload field
 * @returns the value, or undefined when it is not such a string
 */
export function boundedToken(value: unknown): string | undefined {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_ID_CHARS) {
    return undefined;
  }
  return CONTROL_CHAR.test(value) ? undefined : value;
}

/** An own field only: `constructor` or `__proto__` of a payload never reach the prototype. */
function own(fields: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(fields, key) ? fields[key] : undefined;
}
