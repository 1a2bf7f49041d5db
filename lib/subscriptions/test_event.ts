/**
 * The test event `agent webhook test` and the dashboard's Test button send: its payload, and its
 * type and delivery id placed where each signature scheme's senders put them.
 *
 * @module
 */
import { UsageError } from "../errors.ts";
import { boundedToken, MAX_ID_CHARS, payloadTypeField } from "./event_info.ts";
import { keepExactNumber } from "./payload.ts";
import type { SchemeName } from "../signatures/mod.ts";

/**
 * Reads `--payload`, as the gateway reads a body.
 * @param text the flag's value, if given
 * @returns the payload; without the flag, a small one that says it is a test
 * @throws UsageError for text that is not JSON, or JSON that is not an object
 */
export function parseTestPayload(text: string | undefined): Record<string, unknown> {
  if (text === undefined) {
    return { test: true, message: "Test event from agent webhook test" };
  }
  let payload: unknown;
  try {
    // As the gateway reads it: an id past 2^53 is sent and rendered as written, not rounded.
    payload = JSON.parse(text, keepExactNumber);
  } catch (error) {
    throw new UsageError(`--payload is not valid JSON: ${(error as Error).message}`);
  }
  if (payload === null || typeof payload !== "object" || Array.isArray(payload)) {
    throw new UsageError('--payload must be a JSON object, e.g. \'{"issue":{"title":"x"}}\'');
  }
  return payload as Record<string, unknown>;
}

/** A test event's headers besides its signature, and where its type is. */
export interface SentEvent {
  /** Event type and delivery id headers (the signature's come from `signRequest`). */
  headers: Record<string, string>;
  /** The delivery id sent (Standard Webhooks signs it). */
  deliveryId: string;
  /** The payload's field that holds its own type (which `--event` did not set), if any. */
  typeField?: string;
}

/**
 * `--event` as an event type the gateway takes (`boundedToken` in
 * lib/subscriptions/event_info.ts: 1 to {@link MAX_ID_CHARS} characters, no control characters)
 * and, for the schemes that send it in a header (GitHub, GitLab, Shopify), as a header value:
 * printable ASCII.
 * @param scheme the scheme the test event is signed with
 * @param event the flag's value
 * @returns the event type, as given
 * @throws UsageError naming the rule the value breaks
 */
export function checkEvent(scheme: SchemeName, event: string): string {
  const inHeader = scheme === "github" || scheme === "gitlab" || scheme === "shopify";
  if (inHeader && (event.length > MAX_ID_CHARS || !/^[\x20-\x7e]+$/.test(event))) {
    throw new UsageError(
      `--event must be 1 to ${MAX_ID_CHARS} printable ASCII characters for ${scheme}, e.g. issues`,
    );
  }
  if (event.trim() === "" || boundedToken(event) === undefined) {
    throw new UsageError(
      `--event must be 1 to ${MAX_ID_CHARS} characters without control characters`,
    );
  }
  return event;
}

/**
 * Puts the event type and a fresh delivery id where the scheme's senders put them, as
 * lib/subscriptions/event_info.ts reads them: GitHub's, GitLab's and Shopify's headers; for the
 * other schemes the payload's `type`, unless the payload names its type itself (`type`,
 * `event_type` or `event`), and the delivery id header each sender uses (Standard Webhooks'
 * signed `webhook-id` comes with the signature; Stripe and Slack ids are the payload's `id` and
 * `event_id`). A Linear payload gets the current `webhookTimestamp` (milliseconds): the gateway
 * refuses one older than 5 minutes, and a payload copied from a real delivery carries an old
 * one.
 * @param payload changed in place
 * @param options `scheme`: the one signing the event; `event`: its type, checked; `nowMs`: the
 *   clock, in milliseconds since the epoch
 * @returns the headers to send besides the signature's, the delivery id and the payload's own
 *   type field
 */
export function placeEvent(
  payload: Record<string, unknown>,
  options: { scheme: SchemeName; event: string; nowMs: number },
): SentEvent {
  const { scheme, event, nowMs } = options;
  const deliveryId = crypto.randomUUID();
  if (scheme === "linear") payload.webhookTimestamp = nowMs;
  switch (scheme) {
    case "github":
      return { headers: { "x-github-event": event, "x-github-delivery": deliveryId }, deliveryId };
    case "gitlab": {
      const kind = payload.object_kind;
      return {
        headers: { "x-gitlab-event": event, "x-gitlab-event-uuid": deliveryId },
        deliveryId,
        typeField: typeof kind === "string" && kind !== "" ? "object_kind" : undefined,
      };
    }
    case "shopify":
      return {
        headers: { "x-shopify-topic": event, "x-shopify-webhook-id": deliveryId },
        deliveryId,
      };
  }
  const own = payloadTypeField(payload)?.field ??
    (Object.hasOwn(payload, "type") ? "type" : undefined);
  if (own === undefined) payload.type = event;
  const idHeader = ID_HEADERS[scheme];
  return { headers: idHeader ? { [idHeader]: deliveryId } : {}, deliveryId, typeField: own };
}

/** The delivery id header of each scheme's senders, where they send one. */
const ID_HEADERS: Partial<Record<SchemeName, string>> = {
  linear: "linear-delivery",
  generic: "idempotency-key",
  bearer: "idempotency-key",
};
