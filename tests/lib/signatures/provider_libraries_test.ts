import assert from "node:assert/strict";
import examples from "@octokit/webhooks-examples" with { type: "json" };
import { sign as octokitSign } from "@octokit/webhooks-methods";
import Stripe from "stripe";
import { Webhook as StandardWebhook } from "standardwebhooks";
import { Webhook as SvixWebhook } from "svix";
import { createSignatureVerifier } from "../../../lib/signatures/mod.ts";
import { bytes, NOW, OLD_SECRET, SECRET } from "../../fakes/senders.ts";

const stripe = new Stripe("sk_test_x");
const STRIPE_EVENT = JSON.stringify({
  id: "evt_1NG8Du2eZvKYlo2CUI79vXWy",
  object: "event",
  type: "payment_intent.succeeded",
  data: { object: { id: "pi_3NG8Du2eZvKYlo2C0Ka2vDkn", amount: 2000, currency: "usd" } },
});

Deno.test("verify() accepts every @octokit/webhooks-examples payload signed by @octokit/webhooks-methods", async () => {
  const verifier = createSignatureVerifier();
  let checked = 0;
  for (const event of examples) {
    const body = JSON.stringify(event.examples[0], null, 2);
    const headers = new Headers({ "X-Hub-Signature-256": await octokitSign(SECRET, body) });
    const result = await verifier.verify({
      headers,
      body: bytes(body),
      secrets: [SECRET],
      nowSeconds: NOW,
    });
    assert.deepEqual(result, { ok: true, scheme: "github" }, event.name);
    checked++;
  }
  assert.ok(checked > 50, `only ${checked} example events`);
});

Deno.test("verify() accepts a Stripe-Signature made by stripe's generateTestHeaderStringAsync", async () => {
  const header = await stripe.webhooks.generateTestHeaderStringAsync({
    payload: STRIPE_EVENT,
    secret: SECRET,
    timestamp: NOW - 120,
  });
  const result = await createSignatureVerifier().verify({
    headers: new Headers({ "Stripe-Signature": header }),
    body: bytes(STRIPE_EVENT),
    secrets: [SECRET],
    nowSeconds: NOW,
  });
  assert.deepEqual(result, { ok: true, scheme: "stripe" });
});

Deno.test("verify() accepts a rolled Stripe header whose second v1 is the one that matches", async () => {
  const [current, previous] = await Promise.all(
    [OLD_SECRET, SECRET].map((secret) =>
      stripe.webhooks.generateTestHeaderStringAsync({
        payload: STRIPE_EVENT,
        secret,
        timestamp: NOW,
      })
    ),
  );
  const header = `${current},${previous.split(",")[1]},v0=${"0".repeat(64)}`;
  const result = await createSignatureVerifier().verify({
    headers: new Headers({ "Stripe-Signature": header }),
    body: bytes(STRIPE_EVENT),
    secrets: [SECRET],
    nowSeconds: NOW,
  });
  assert.deepEqual(result, { ok: true, scheme: "stripe" });
});

Deno.test("verify() rejects a stripe-library header whose timestamp is 301 s old as stale", async () => {
  const header = await stripe.webhooks.generateTestHeaderStringAsync({
    payload: STRIPE_EVENT,
    secret: SECRET,
    timestamp: NOW - 301,
  });
  const result = await createSignatureVerifier().verify({
    headers: new Headers({ "Stripe-Signature": header }),
    body: bytes(STRIPE_EVENT),
    secrets: [SECRET],
    nowSeconds: NOW,
  });
  assert.deepEqual(result, { ok: false, scheme: "stripe", reason: "stale" });
});

Deno.test("verify() accepts a signature made by the standardwebhooks library", async () => {
  const body = JSON.stringify({ type: "invoice.paid", data: { id: "in_1" } });
  const signature = new StandardWebhook(SECRET).sign("msg_1", new Date(NOW * 1000), body);
  const result = await createSignatureVerifier().verify({
    headers: new Headers({
      "webhook-id": "msg_1",
      "webhook-timestamp": String(NOW),
      "webhook-signature": signature,
    }),
    body: bytes(body),
    secrets: [SECRET],
    nowSeconds: NOW + 300,
  });
  assert.deepEqual(result, { ok: true, scheme: "standard" });
});

Deno.test("verify() accepts a standardwebhooks raw-format secret given without whsec_", async () => {
  const body = '{"type":"ping"}';
  const secret = "plain-text-shared-secret";
  const signature = new StandardWebhook(secret, { format: "raw" }).sign(
    "msg_2",
    new Date(NOW * 1000),
    body,
  );
  const result = await createSignatureVerifier().verify({
    headers: new Headers({
      "webhook-id": "msg_2",
      "webhook-timestamp": String(NOW),
      "webhook-signature": signature,
    }),
    body: bytes(body),
    secrets: [secret],
    nowSeconds: NOW,
  });
  assert.deepEqual(result, { ok: true, scheme: "standard" });
});

Deno.test("verify() accepts a signature made by the svix library under svix-* headers", async () => {
  const body = JSON.stringify({ eventLabel: "user.created", data: { id: 42 } });
  const signature = new SvixWebhook(SECRET).sign("msg_svix", new Date(NOW * 1000), body);
  const result = await createSignatureVerifier().verify({
    headers: new Headers({
      "svix-id": "msg_svix",
      "svix-timestamp": String(NOW),
      "svix-signature": `v1a,${"A".repeat(86)}== ${signature}`,
    }),
    body: bytes(body),
    secrets: [OLD_SECRET, SECRET],
    nowSeconds: NOW - 300,
  });
  assert.deepEqual(result, { ok: true, scheme: "standard" });
});
