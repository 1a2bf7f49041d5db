/**
 * Schemes that sign the body alone with HMAC-SHA256 and carry no timestamp, so they have no
 * replay window: GitHub, Shopify and Linear. The secret's UTF-8 bytes are the key.
 *
 * @module
 */

import { decodeBase64, type SchemeName } from "./mod.ts";
import { decodeHex, hmacMatches } from "./_crypto.ts";
import { headerValue } from "./_headers.ts";
import type { Scheme, SchemeContext, SchemeOutcome } from "./_types.ts";

function bodyHmacScheme(
  name: SchemeName,
  header: string,
  decode: (value: string) => Uint8Array<ArrayBuffer> | null,
): Scheme {
  return {
    name,
    headers: [header],
    async check(context: SchemeContext): Promise<SchemeOutcome> {
      const value = headerValue(context.headers, header);
      const signature = value === null ? null : decode(value);
      if (signature === null) return "invalid";
      const matched = await hmacMatches(context.keys, {
        secrets: context.secrets,
        material: "utf8",
        data: context.body,
        signatures: [signature],
      });
      return matched ? "ok" : "invalid";
    },
  };
}

/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`. The older SHA-1
 * `X-Hub-Signature` is not accepted.
 * Source: https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
 */
export const github: Scheme = bodyHmacScheme(
  "github",
  "x-hub-signature-256",
  (value) => value.startsWith("sha256=") ? decodeHex(value.slice("sha256=".length)) : null,
);

/**
 * Shopify: `X-Shopify-Hmac-Sha256: <base64 HMAC-SHA256 of the body>`, keyed with the app's
 * client secret.
 * Source: https://shopify.dev/docs/apps/build/webhooks/subscribe/https#step-5-verify-the-webhook
 */
export const shopify: Scheme = bodyHmacScheme("shopify", "x-shopify-hmac-sha256", decodeBase64);

/**
 * Linear: `Linear-Signature: <hex HMAC-SHA256 of the body>`. Linear's `webhookTimestamp` lives
 * inside the JSON body, which is not parsed before authentication: the ingest pipeline checks it
 * against the replay window once the body is parsed (`linearTimestampFresh` in server/ingest).
 * Source: https://linear.app/developers/webhooks#securing-webhooks
 */
export const linear: Scheme = bodyHmacScheme("linear", "linear-signature", decodeHex);
