/**
 * Standard Webhooks, and Svix which it grew out of: `webhook-id`, `webhook-timestamp`,
 * `webhook-signature` (or the same three with `svix-`), signing `<id>.<timestamp>.<body>`.
 * Source: https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
 *
 * @module
 */

import { MAX_ID_CHARS } from "../subscriptions/event_info.ts";
import { concatBytes, decodeBase64, encodeBase64, utf8 } from "./_encoding.ts";
import { hmacMatches, hmacOf } from "./_hmac.ts";
import { checkTimestamp, decodeAll, headerValue } from "./_headers.ts";
import type { Scheme, SchemeContext, SchemeOutcome, SigningContext } from "./_types.ts";

/**
 * The `v1,<base64>` entries of a space-separated signature list. Other versions (`v1a`, the
 * asymmetric ed25519 signatures) are skipped: a shared-secret gateway cannot check them.
 */
function symmetricSignatures(value: string): Uint8Array<ArrayBuffer>[] | null {
  const entries = value.split(" ").filter((entry) => entry.startsWith("v1,"));
  return decodeAll(entries.map((entry) => entry.slice("v1,".length)), decodeBase64);
}

/**
 * What a message id may be: no dot, so the signed `<id>.<timestamp>.<body>` splits one way; and
 * no longer than a delivery id may be, so a signed id is always the delivery id (a longer one,
 * dropped there, left the event to unsigned headers or a generated id: never deduplicated).
 */
const PLAIN_ID = new RegExp(`^[A-Za-z0-9_-]{1,${MAX_ID_CHARS}}$`);

/**
 * Standard Webhooks / Svix: HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`, base64,
 * sent as one or more space-separated `v1,<signature>` entries; one matching entry accepts.
 * The timestamp must be within the tolerance in both directions. A `whsec_` secret is
 * base64-decoded for the key (as the providers show it); any other secret is used as UTF-8
 * bytes. The `webhook-` headers win when both families are present; they are never mixed.
 * Signing sends the `webhook-` family, one `v1,` entry, with the delivery id as `webhook-id`.
 *
 * The id must be a plain token (letters, digits, `_`, `-`; Svix's `msg_…`, UUIDs): an id that
 * may hold dots could cut any signed text at a planted `.<timestamp>.` and pass its tail as a
 * new body with a new id.
 * Source: https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
 */
export const standard: Scheme = {
  name: "standard",
  headers: ["webhook-signature", "svix-signature"],
  async check(context: SchemeContext): Promise<SchemeOutcome> {
    const family = context.headers.has("webhook-signature") ? "webhook" : "svix";
    const id = headerValue(context.headers, `${family}-id`);
    const timestamp = headerValue(context.headers, `${family}-timestamp`);
    const value = headerValue(context.headers, `${family}-signature`);
    const signatures = value === null ? null : symmetricSignatures(value);
    if (id === null || !PLAIN_ID.test(id) || signatures === null) return "invalid";
    const fresh = checkTimestamp(timestamp, context.nowSeconds, context.toleranceSeconds);
    if (fresh !== "ok") return fresh;
    const matched = await hmacMatches(context.keys, {
      secrets: context.secrets,
      material: "standard",
      data: concatBytes(utf8(`${id}.${timestamp}.`), context.body),
      signatures,
    });
    return matched ? "ok" : "invalid";
  },
  sign({ secret, body, deliveryId, timestamp }: SigningContext): Record<string, string> | null {
    const signature = hmacOf(secret, "standard", `${deliveryId}.${timestamp}.${body}`);
    if (signature === null) return null;
    return {
      "webhook-id": deliveryId,
      "webhook-timestamp": timestamp,
      "webhook-signature": `v1,${encodeBase64(signature)}`,
    };
  },
};
