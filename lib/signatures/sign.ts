/**
 * Signing a request as each scheme's senders sign it: the other side of the verifiers in
 * `server/signatures/`, for `agent webhook test`, which must reach a subscription pinned to any
 * scheme (`--auth`). The formats are those of CONTRACT §5; each scheme's source is cited by its
 * verifier.
 *
 * ```ts
 * const headers = signRequest("stripe", secret, body, { deliveryId: "t-1", nowSeconds: 1_700_000_000 });
 * // { "stripe-signature": "t=1700000000,v1=5257a8..." }
 * ```
 *
 * @module
 */
import { createHmac } from "node:crypto";
import { keyBytes, utf8 } from "./_key_bytes.ts";
import type { SchemeName } from "./mod.ts";

/** What a signature may cover besides the body. */
export interface SignOptions {
  /**
   * The delivery id, for the schemes that sign one (Standard Webhooks' `webhook-id`): letters,
   * digits, `_` and `-` only, as the verifier requires.
   */
  deliveryId: string;
  /** The signing time, in seconds since the epoch (the schemes with a replay window). */
  nowSeconds: number;
}

/**
 * The headers that authenticate `body` under `secret` for `scheme`.
 * @param scheme the scheme, e.g. `github`, `stripe`, `standard`
 * @param secret the subscription's secret (for Standard Webhooks, a `whsec_` secret is
 *   base64-decoded, as its senders do)
 * @param body the exact body text to be sent (signed as its UTF-8 bytes)
 * @param options the delivery id and the time the timestamped schemes sign
 * @returns lower-case header names and values, e.g. `{"x-hub-signature-256": "sha256=<hex>"}`;
 *   null when the secret gives no key (empty, or a `whsec_` secret that is not base64), or
 *   for a name that is no scheme (a hand-edited file)
 */
export function signRequest(
  scheme: SchemeName,
  secret: string,
  body: string,
  options: SignOptions,
): Record<string, string> | null {
  const timestamp = String(Math.floor(options.nowSeconds));
  const hmac = (text: string, key: Uint8Array = utf8(secret)) =>
    createHmac("sha256", key).update(text);
  if (secret === "") return null;
  switch (scheme) {
    case "github":
      return { "x-hub-signature-256": `sha256=${hmac(body).digest("hex")}` };
    case "gitlab":
      return { "x-gitlab-token": secret };
    case "bearer":
      return { authorization: `Bearer ${secret}` };
    case "shopify":
      return { "x-shopify-hmac-sha256": hmac(body).digest("base64") };
    case "linear":
      return { "linear-signature": hmac(body).digest("hex") };
    case "stripe":
      return {
        "stripe-signature": `t=${timestamp},v1=${hmac(`${timestamp}.${body}`).digest("hex")}`,
      };
    case "slack":
      return {
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": `v0=${hmac(`v0:${timestamp}:${body}`).digest("hex")}`,
      };
    case "generic":
      return {
        "x-webhook-timestamp": timestamp,
        "x-webhook-signature-v2": `sha256=${hmac(`${timestamp}.${body}`).digest("hex")}`,
      };
    case "standard": {
      const key = keyBytes(secret, "standard");
      if (key === null || key.length === 0) return null;
      const signed = `${options.deliveryId}.${timestamp}.${body}`;
      return {
        "webhook-id": options.deliveryId,
        "webhook-timestamp": timestamp,
        "webhook-signature": `v1,${hmac(signed, key).digest("base64")}`,
      };
    }
    default:
      return null;
  }
}
