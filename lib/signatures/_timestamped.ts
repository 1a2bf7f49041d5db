/**
 * Schemes with a timestamp in its own header: Slack, and the Generic scheme for senders that
 * follow no provider (a `ts.body` V2 signature, or the legacy body-only one). Both sign in hex
 * with the secret's UTF-8 bytes as the key.
 *
 * @module
 */

import { concatBytes, decodeHex, encodeHex, utf8 } from "./_encoding.ts";
import { hmacMatches, hmacOf } from "./_hmac.ts";
import { checkTimestamp, headerValue } from "./_headers.ts";
import type { Scheme, SchemeContext, SchemeOutcome, SigningContext } from "./_types.ts";

/**
 * Checks the timestamp (unless `timestamp` is `undefined`: a scheme without one), then the
 * signature over `prefix` + body, with the secret's UTF-8 bytes as the key.
 */
async function checkSigned(
  context: SchemeContext,
  parts: { signature: Uint8Array<ArrayBuffer> | null; timestamp?: string | null; prefix: string },
): Promise<SchemeOutcome> {
  if (parts.signature === null) return "invalid";
  if (parts.timestamp !== undefined) {
    const fresh = checkTimestamp(parts.timestamp, context.nowSeconds, context.toleranceSeconds);
    if (fresh !== "ok") return fresh;
  }
  const matched = await hmacMatches(context.keys, {
    secrets: context.secrets,
    material: "utf8",
    data: concatBytes(utf8(parts.prefix), context.body),
    signatures: [parts.signature],
  });
  return matched ? "ok" : "invalid";
}

/** Hex after a required `prefix` (`v0=`), or after an optional one when `optional` is set. */
function hexAfter(
  value: string | null,
  prefix: string,
  optional = false,
): Uint8Array<ArrayBuffer> | null {
  if (value === null) return null;
  if (value.startsWith(prefix)) return decodeHex(value.slice(prefix.length));
  return optional ? decodeHex(value) : null;
}

/**
 * The timestamp header and the signature header, `signaturePrefix` + hex HMAC of `signedPrefix`
 * + body; null when the secret gives no key.
 */
function signTimestamped(
  context: SigningContext,
  headers: { timestamp: string; signature: string },
  prefixes: { signed: string; signature: string },
): Record<string, string> | null {
  const signature = hmacOf(context.secret, "utf8", `${prefixes.signed}${context.body}`);
  if (signature === null) return null;
  return {
    [headers.timestamp]: context.timestamp,
    [headers.signature]: `${prefixes.signature}${encodeHex(signature)}`,
  };
}

/**
 * Slack: `X-Slack-Signature: v0=<hex>` over `v0:<X-Slack-Request-Timestamp>:<body>`, keyed with
 * the app's signing secret; the timestamp must be within the tolerance in both directions.
 * Source: https://api.slack.com/authentication/verifying-requests-from-slack
 */
export const slack: Scheme = {
  name: "slack",
  headers: ["x-slack-signature"],
  check(context: SchemeContext): Promise<SchemeOutcome> {
    const timestamp = headerValue(context.headers, "x-slack-request-timestamp");
    return checkSigned(context, {
      signature: hexAfter(headerValue(context.headers, "x-slack-signature"), "v0="),
      timestamp,
      prefix: `v0:${timestamp}:`,
    });
  },
  sign: (context) =>
    signTimestamped(
      context,
      { timestamp: "x-slack-request-timestamp", signature: "x-slack-signature" },
      { signed: `v0:${context.timestamp}:`, signature: "v0=" },
    ),
};

/**
 * Generic, for senders that follow no provider (docs/signatures.md). V2:
 * `X-Webhook-Signature-V2: [sha256=]<hex>` over `<X-Webhook-Timestamp>.<body>`, with the
 * timestamp within the tolerance in both directions. Legacy V1, only when V2 is absent:
 * `X-Webhook-Signature: [sha256=]<hex>` over the body, no replay window. Both HMAC-SHA256 with
 * the secret's UTF-8 bytes as the key. Signing sends V2, with the `sha256=` prefix.
 */
export const generic: Scheme = {
  name: "generic",
  headers: ["x-webhook-signature-v2", "x-webhook-signature"],
  check(context: SchemeContext): Promise<SchemeOutcome> {
    if (!context.headers.has("x-webhook-signature-v2")) {
      const value = headerValue(context.headers, "x-webhook-signature");
      return checkSigned(context, { signature: hexAfter(value, "sha256=", true), prefix: "" });
    }
    const timestamp = headerValue(context.headers, "x-webhook-timestamp");
    return checkSigned(context, {
      signature: hexAfter(headerValue(context.headers, "x-webhook-signature-v2"), "sha256=", true),
      timestamp,
      prefix: `${timestamp}.`,
    });
  },
  sign: (context) =>
    signTimestamped(
      context,
      { timestamp: "x-webhook-timestamp", signature: "x-webhook-signature-v2" },
      { signed: `${context.timestamp}.`, signature: "sha256=" },
    ),
};
