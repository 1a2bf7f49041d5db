import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { verify as octokitVerify } from "@octokit/webhooks-methods";
import Stripe from "stripe";
import { Webhook as StandardWebhook } from "standardwebhooks";
import {
  createSignatureVerifier,
  SCHEME_NAMES,
  type SchemeName,
  type SignatureSchemeName,
  signRequest,
} from "../../../lib/signatures/mod.ts";
import { BODY, bytes, hmac, NOW, OTHER_SECRET, SECRET } from "../../fakes/senders.ts";

const OPTIONS = { deliveryId: "test-1", nowSeconds: NOW };

async function verdict(scheme: SchemeName, headers: Record<string, string>, secret: string) {
  return await createSignatureVerifier().verify({
    headers: new Headers(headers),
    body: bytes(BODY),
    secrets: [secret],
    nowSeconds: NOW,
    only: scheme,
  });
}

Deno.test("signRequest signs as every scheme the gateway verifies, and only with that secret", async () => {
  assert.equal(SCHEME_NAMES.length, 9);
  for (const scheme of SCHEME_NAMES) {
    const headers = signRequest(scheme, SECRET, BODY, OPTIONS)!;
    assert.deepEqual(await verdict(scheme, headers, SECRET), { ok: true, scheme }, scheme);
    assert.deepEqual(
      await verdict(scheme, headers, OTHER_SECRET),
      { ok: false, scheme, reason: "invalid" },
      `${scheme} with another secret`,
    );
  }
});

Deno.test("signRequest's signatures pass the providers' own libraries", async () => {
  const github = signRequest("github", SECRET, BODY, OPTIONS)!;
  assert.ok(await octokitVerify(SECRET, BODY, github["x-hub-signature-256"]));

  const stripe = signRequest("stripe", SECRET, BODY, {
    ...OPTIONS,
    nowSeconds: Date.now() / 1000,
  })!;
  const event = await new Stripe("sk_test_x").webhooks.constructEventAsync(
    BODY,
    stripe["stripe-signature"],
    SECRET,
  );
  assert.equal(event.type, "push");

  const standard = signRequest("standard", SECRET, BODY, {
    ...OPTIONS,
    nowSeconds: Date.now() / 1000,
  })!;
  assert.deepEqual(new StandardWebhook(SECRET).verify(BODY, standard), JSON.parse(BODY));
  assert.equal(standard["webhook-id"], "test-1");
});

Deno.test("signRequest gives Slack's documented signature for Slack's documented request", () => {
  // https://api.slack.com/authentication/verifying-requests-from-slack
  const body = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&" +
    "channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&" +
    "command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2F" +
    "T1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&" +
    "trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
  const headers = signRequest("slack", "8f742231b10e8888abcd99yyyzzz85a5", body, {
    deliveryId: "x",
    nowSeconds: 1531420618,
  });
  assert.deepEqual(headers, {
    "x-slack-request-timestamp": "1531420618",
    "x-slack-signature": "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
  });
});

Deno.test("signRequest gives no headers for a secret that gives no key", () => {
  assert.equal(signRequest("github", "", BODY, OPTIONS), null);
  assert.equal(signRequest("standard", "whsec_not base64!", BODY, OPTIONS), null);
  // A plain secret is a Standard Webhooks key as its UTF-8 bytes, as the verifier takes it.
  assert.ok(signRequest("standard", "plain-secret", BODY, OPTIONS));
});

Deno.test("signRequest writes each scheme's headers as its senders do, byte for byte", () => {
  const t = String(NOW);
  const key = Buffer.from(SECRET.slice("whsec_".length), "base64");
  const expected: Record<SignatureSchemeName, Record<string, string>> = {
    github: { "x-hub-signature-256": `sha256=${hmac(SECRET, BODY, "hex")}` },
    gitlab: { "x-gitlab-token": SECRET },
    standard: {
      "webhook-id": "test-1",
      "webhook-timestamp": t,
      "webhook-signature": `v1,${hmac(key, `test-1.${t}.${BODY}`, "base64")}`,
    },
    stripe: { "stripe-signature": `t=${t},v1=${hmac(SECRET, `${t}.${BODY}`, "hex")}` },
    slack: {
      "x-slack-request-timestamp": t,
      "x-slack-signature": `v0=${hmac(SECRET, `v0:${t}:${BODY}`, "hex")}`,
    },
    shopify: { "x-shopify-hmac-sha256": hmac(SECRET, BODY, "base64") },
    linear: { "linear-signature": hmac(SECRET, BODY, "hex") },
    generic: {
      "x-webhook-timestamp": t,
      "x-webhook-signature-v2": `sha256=${hmac(SECRET, `${t}.${BODY}`, "hex")}`,
    },
    bearer: { authorization: `Bearer ${SECRET}` },
  };
  for (const scheme of SCHEME_NAMES) {
    assert.deepEqual(signRequest(scheme, SECRET, BODY, OPTIONS), expected[scheme], scheme);
  }
  const fractional = signRequest("stripe", SECRET, BODY, { ...OPTIONS, nowSeconds: NOW + 0.9 });
  assert.deepEqual(fractional, expected.stripe, "the signing time is rounded down to a second");
});

Deno.test("signRequest gives no headers for an empty key or a name that is no scheme", () => {
  assert.equal(signRequest("standard", "whsec_", BODY, OPTIONS), null);
  for (const scheme of ["gitlab", "bearer"] as const) {
    assert.equal(signRequest(scheme, "", BODY, OPTIONS), null, scheme);
  }
  for (const name of ["basic", "toString", "__proto__", ""]) {
    assert.equal(signRequest(name as SchemeName, SECRET, BODY, OPTIONS), null, name);
  }
});
