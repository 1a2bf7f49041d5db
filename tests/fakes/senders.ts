/**
 * Test senders: one per wire format of docs/signatures.md, signing with `node:crypto` so that the code
 * under test never signs its own inputs.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { createHmac } from "node:crypto";
import type { SchemeName } from "../../lib/signatures/mod.ts";

/** The injected clock of every test, Unix seconds (2023-11-14T22:13:20Z). */
export const NOW = 1_700_000_000;
/** The current secret, in the `whsec_` form so that it suits every scheme. */
export const SECRET = "whsec_" + Buffer.from("current secret of thirty-two by!").toString("base64");
/** A previous secret, still in its grace period. */
export const OLD_SECRET = "whsec_" +
  Buffer.from("previous secret, thirty-two byte").toString("base64");
/** A secret nobody was given. */
export const OTHER_SECRET = "whsec_" +
  Buffer.from("someone else's secret, 32 bytes!").toString("base64");
/** A JSON body of the kind the gateway receives. */
export const BODY = JSON.stringify({ type: "push", action: "created", data: { n: 1, s: "é✓" } });

/** HMAC-SHA256 of `data` under `key`, encoded. */
export function hmac(key: string | Uint8Array, data: string, encoding: "hex" | "base64"): string {
  return createHmac("sha256", key).update(data).digest(encoding);
}

/** The Standard Webhooks key of a `whsec_` secret. */
function whsecKey(secret: string): Uint8Array {
  return Buffer.from(secret.slice("whsec_".length), "base64");
}

/** What a sender signs with. */
export interface SignOptions {
  secret: string;
  body: string;
  timestamp: number;
}

/** One sender: the scheme it should be detected as and how it signs. */
export interface Sender {
  /** Test label (`svix` and `generic-v1` are variants of `standard` and `generic`). */
  label: string;
  scheme: SchemeName;
  /** The header that names the scheme. */
  header: string;
  /** Whether a timestamp is signed (and so can be stale). */
  timed: boolean;
  /** Whether the body is covered (token schemes send the secret itself). */
  coversBody: boolean;
  sign(options: SignOptions): Record<string, string>;
}

/** Every sender, in the order of docs/signatures.md. */
export const SENDERS: readonly Sender[] = [
  {
    label: "github",
    scheme: "github",
    header: "X-Hub-Signature-256",
    timed: false,
    coversBody: true,
    sign: (o) => ({ "X-Hub-Signature-256": `sha256=${hmac(o.secret, o.body, "hex")}` }),
  },
  {
    label: "gitlab",
    scheme: "gitlab",
    header: "X-Gitlab-Token",
    timed: false,
    coversBody: false,
    sign: (o) => ({ "X-Gitlab-Token": o.secret }),
  },
  {
    label: "standard",
    scheme: "standard",
    header: "webhook-signature",
    timed: true,
    coversBody: true,
    sign: (o) => ({
      "webhook-id": "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
      "webhook-timestamp": String(o.timestamp),
      "webhook-signature": `v1,${
        hmac(
          whsecKey(o.secret),
          `msg_2KWPBgLlAfxdpx2AI54pPJ85f4W.${o.timestamp}.${o.body}`,
          "base64",
        )
      }`,
    }),
  },
  {
    label: "svix",
    scheme: "standard",
    header: "svix-signature",
    timed: true,
    coversBody: true,
    sign: (o) => ({
      "svix-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
      "svix-timestamp": String(o.timestamp),
      "svix-signature": `v1,${
        hmac(whsecKey(o.secret), `msg_p5jXN8AQM9LWM0D4loKWxJek.${o.timestamp}.${o.body}`, "base64")
      }`,
    }),
  },
  {
    label: "stripe",
    scheme: "stripe",
    header: "Stripe-Signature",
    timed: true,
    coversBody: true,
    sign: (o) => ({
      "Stripe-Signature": `t=${o.timestamp},v1=${
        hmac(o.secret, `${o.timestamp}.${o.body}`, "hex")
      }`,
    }),
  },
  {
    label: "slack",
    scheme: "slack",
    header: "X-Slack-Signature",
    timed: true,
    coversBody: true,
    sign: (o) => ({
      "X-Slack-Request-Timestamp": String(o.timestamp),
      "X-Slack-Signature": `v0=${hmac(o.secret, `v0:${o.timestamp}:${o.body}`, "hex")}`,
    }),
  },
  {
    label: "shopify",
    scheme: "shopify",
    header: "X-Shopify-Hmac-Sha256",
    timed: false,
    coversBody: true,
    sign: (o) => ({ "X-Shopify-Hmac-Sha256": hmac(o.secret, o.body, "base64") }),
  },
  {
    label: "linear",
    scheme: "linear",
    header: "Linear-Signature",
    timed: false,
    coversBody: true,
    sign: (o) => ({ "Linear-Signature": hmac(o.secret, o.body, "hex") }),
  },
  {
    label: "generic-v2",
    scheme: "generic",
    header: "X-Webhook-Signature-V2",
    timed: true,
    coversBody: true,
    sign: (o) => ({
      "X-Webhook-Timestamp": String(o.timestamp),
      "X-Webhook-Signature-V2": `sha256=${hmac(o.secret, `${o.timestamp}.${o.body}`, "hex")}`,
    }),
  },
  {
    label: "generic-v1",
    scheme: "generic",
    header: "X-Webhook-Signature",
    timed: false,
    coversBody: true,
    sign: (o) => ({ "X-Webhook-Signature": hmac(o.secret, o.body, "hex") }),
  },
  {
    label: "bearer",
    scheme: "bearer",
    header: "Authorization",
    timed: false,
    coversBody: false,
    sign: (o) => ({ "Authorization": `Bearer ${o.secret}` }),
  },
];

/** The raw bytes of a body string, as the gateway hands them to the verifier. */
export function bytes(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}
