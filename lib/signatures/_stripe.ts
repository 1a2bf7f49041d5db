/**
 * Stripe: `Stripe-Signature: t=<timestamp>,v1=<hex>[,v1=<hex>...]`, signing `<t>.<body>`.
 * Source: https://docs.stripe.com/webhooks#verify-manually
 *
 * @module
 */

import { concatBytes, decodeHex, encodeHex, utf8 } from "./_encoding.ts";
import { hmacMatches, hmacOf } from "./_hmac.ts";
import { checkTimestamp, decodeAll, headerValue } from "./_headers.ts";
import type { Scheme, SchemeContext, SchemeOutcome, SigningContext } from "./_types.ts";

/** The `t` value (exactly one, else `null`) and every `v1` value; other keys (`v0`) are ignored. */
function parseStripeHeader(value: string): { timestamp: string | null; v1: string[] } {
  const timestamps: string[] = [];
  const v1: string[] = [];
  for (const item of value.split(",")) {
    const separator = item.indexOf("=");
    if (separator < 0) continue;
    const key = item.slice(0, separator).trim();
    const text = item.slice(separator + 1).trim();
    if (key === "t") timestamps.push(text);
    if (key === "v1") v1.push(text);
  }
  return { timestamp: timestamps.length === 1 ? timestamps[0] : null, v1 };
}

/**
 * Stripe: HMAC-SHA256 of `<t>.<body>` in hex, one or more `v1=` entries (Stripe sends two while
 * an endpoint secret is being rolled); one matching entry accepts. The `whsec_...` secret is used
 * as-is: its UTF-8 bytes are the key, unlike Standard Webhooks. `t` must be within the tolerance
 * in both directions (Stripe's libraries check only age; a future `t` is as suspect). Signing
 * sends one `v1=` entry.
 * Source: https://docs.stripe.com/webhooks#verify-manually
 */
export const stripe: Scheme = {
  name: "stripe",
  headers: ["stripe-signature"],
  async check(context: SchemeContext): Promise<SchemeOutcome> {
    const value = headerValue(context.headers, "stripe-signature");
    if (value === null) return "invalid";
    const { timestamp, v1 } = parseStripeHeader(value);
    const signatures = decodeAll(v1, decodeHex);
    if (timestamp === null || signatures === null) return "invalid";
    const fresh = checkTimestamp(timestamp, context.nowSeconds, context.toleranceSeconds);
    if (fresh !== "ok") return fresh;
    const matched = await hmacMatches(context.keys, {
      secrets: context.secrets,
      material: "utf8",
      data: concatBytes(utf8(`${timestamp}.`), context.body),
      signatures,
    });
    return matched ? "ok" : "invalid";
  },
  sign({ secret, body, timestamp }: SigningContext): Record<string, string> | null {
    const signature = hmacOf(secret, "utf8", `${timestamp}.${body}`);
    if (signature === null) return null;
    return { "stripe-signature": `t=${timestamp},v1=${encodeHex(signature)}` };
  },
};
