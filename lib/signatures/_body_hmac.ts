/**
 * Schemes that sign the body alone with HMAC-SHA256 and carry no timestamp, so they have no
 * replay window: GitHub, Shopify and Linear. The secret's UTF-8 bytes are the key.
 *
 * @module
 */

import type { SchemeName } from "./mod.ts";
import { decodeBase64, decodeHex, encodeBase64, encodeHex } from "./_encoding.ts";
import { hmacMatches, hmacOf } from "./_hmac.ts";
import { headerValue } from "./_headers.ts";
import type { Scheme, SchemeContext, SchemeOutcome, SigningContext } from "./_types.ts";

/** How one scheme writes its signature in its header, and reads it back. */
interface SignatureFormat {
  /** The signature bytes of a header value, or null when it is malformed. */
  decode(value: string): Uint8Array<ArrayBuffer> | null;
  /** The header value of a signature. */
  encode(signature: Uint8Array): string;
}

function bodyHmacScheme(name: SchemeName, header: string, format: SignatureFormat): Scheme {
  return {
    name,
    headers: [header],
    async check(context: SchemeContext): Promise<SchemeOutcome> {
      const value = headerValue(context.headers, header);
      const signature = value === null ? null : format.decode(value);
      if (signature === null) return "invalid";
      const matched = await hmacMatches(context.keys, {
        secrets: context.secrets,
        material: "utf8",
        data: context.body,
        signatures: [signature],
      });
      return matched ? "ok" : "invalid";
    },
    sign(context: SigningContext): Record<string, string> | null {
      const signature = hmacOf(context.secret, "utf8", context.body);
      return signature === null ? null : { [header]: format.encode(signature) };
    },
  };
}

/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`. The older SHA-1
 * `X-Hub-Signature` is not accepted.
 * Source: https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
 */
export const github: Scheme = bodyHmacScheme("github", "x-hub-signature-256", {
  decode: (value) => value.startsWith("sha256=") ? decodeHex(value.slice("sha256=".length)) : null,
  encode: (signature) => `sha256=${encodeHex(signature)}`,
});

/**
 * Shopify: `X-Shopify-Hmac-Sha256: <base64 HMAC-SHA256 of the body>`, keyed with the app's
 * client secret.
 * Source: https://shopify.dev/docs/apps/build/webhooks/subscribe/https#step-5-verify-the-webhook
 */
export const shopify: Scheme = bodyHmacScheme("shopify", "x-shopify-hmac-sha256", {
  decode: decodeBase64,
  encode: encodeBase64,
});

/**
 * Linear: `Linear-Signature: <hex HMAC-SHA256 of the body>`. Linear's `webhookTimestamp` lives
 * inside the JSON body, which is not parsed before authentication: the ingest pipeline checks it
 * against the replay window once the body is parsed (in `server/ingest/`).
 * Source: https://linear.app/developers/webhooks#securing-webhooks
 */
export const linear: Scheme = bodyHmacScheme("linear", "linear-signature", {
  decode: decodeHex,
  encode: encodeHex,
});
