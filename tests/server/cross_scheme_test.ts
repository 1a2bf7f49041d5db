/**
 * Attacks across signature schemes, through the real ingest pipeline: every scheme of an
 * unpinned subscription is keyed by the same secret, so a timestamped scheme's signed text
 * (Slack's `v0:<ts>:<body>`, Stripe's `<ts>.<body>`) sent again as the body under a scheme that
 * signs the body alone must not pass; and an id the scheme signed must not give way to an
 * unsigned header added to a copy.
 */
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { join } from "node:path";
import Stripe from "stripe";
import { Webhook as StandardWebhook } from "standardwebhooks";
import { createMemoryRateLimiter } from "../../lib/subscriptions/rate_limit.ts";
import type { StateStore } from "../../lib/state/mod.ts";
import { openStateStore } from "../../lib/state/sqlite/mod.ts";
import type { Route } from "../../lib/subscriptions/mod.ts";
import { createApp } from "../../server/app.ts";
import { createSignatureVerifier } from "../../lib/signatures/mod.ts";

const SECRET = "open-secret-123";
/** SECRET as Standard Webhooks libraries take it: `whsec_` and the key's base64. */
const WHSEC = `whsec_${btoa(SECRET)}`;
const NOW_MS = Date.parse("2026-11-21T12:00:00Z");
const NOW = NOW_MS / 1000;

/** The real pipeline over a real store, with one unpinned subscription `open`. */
async function gateway() {
  const dir = await Deno.makeTempDir({ prefix: "agent-cross-" });
  const store: StateStore = openStateStore(join(dir, "gateway.db"));
  const routes = new Map<string, Route>([
    ["open", { name: "open", origin: "dynamic", secret: SECRET }],
  ]);
  const app = createApp({
    findRoute: (name) => routes.get(name),
    maxBodyBytes: 65_536,
    rateLimitPerMinute: 1000,
    verifier: createSignatureVerifier(),
    rateLimiter: createMemoryRateLimiter(),
    store,
    onAccepted: () => {},
    deliverNow: () => Promise.reject(new Error("no direct routes here")),
    now: () => NOW_MS,
    newId: () => crypto.randomUUID(),
  });
  return {
    store,
    post: async (body: string, headers: Record<string, string>) => {
      const response = await app.request("/webhooks/open", { method: "POST", headers, body });
      return { status: response.status, body: await response.json() };
    },
    stored: async () => (await store.listEvents({ limit: 100 })).length,
    async [Symbol.asyncDispose]() {
      await store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const hmac = (text: string, encoding: "hex" | "base64") =>
  createHmac("sha256", SECRET).update(text).digest(encoding);

const FORM = "application/x-www-form-urlencoded";

Deno.test("a Slack request captured hours ago is refused under every scheme that signs the body alone", async () => {
  await using g = await gateway();
  const ts = NOW - 7200;
  const form = "token=abc&team_id=T1&command=%2Fdeploy&text=prod";
  const signed = `v0:${ts}:${form}`;
  const slack = await g.post(form, {
    "content-type": FORM,
    "x-slack-request-timestamp": `${ts}`,
    "x-slack-signature": `v0=${hmac(signed, "hex")}`,
  });
  assert.equal(slack.status, 401, "stale in its own scheme");
  const replays: [string, Record<string, string>][] = [
    ["github", { "x-hub-signature-256": `sha256=${hmac(signed, "hex")}` }],
    ["linear", { "linear-signature": hmac(signed, "hex") }],
    ["shopify", { "x-shopify-hmac-sha256": hmac(signed, "base64") }],
    ["generic", { "x-webhook-signature": `sha256=${hmac(signed, "hex")}` }],
  ];
  for (const [scheme, headers] of replays) {
    const replay = await g.post(signed, { "content-type": FORM, ...headers });
    assert.equal(replay.status, 400, `${scheme}: ${JSON.stringify(replay.body)}`);
    assert.match(replay.body.error, /payload field alone|must be JSON/);
  }
  assert.equal(await g.stored(), 0);
});

Deno.test("a Stripe signature sent again as GitHub's, with its timestamp in the body, is refused", async () => {
  await using g = await gateway();
  const event = JSON.stringify({ id: "evt_1", type: "charge.refunded", data: {} });
  const signed = `${NOW - 86_400}.${event}`;
  for (const contentType of [FORM, "application/json"]) {
    const replay = await g.post(signed, {
      "content-type": contentType,
      "x-hub-signature-256": `sha256=${hmac(signed, "hex")}`,
    });
    assert.equal(replay.status, 400, contentType);
  }
  assert.equal(await g.stored(), 0);
});

Deno.test("a fresh Slack slash command (a form) is still accepted", async () => {
  await using g = await gateway();
  const form = "token=abc&command=%2Fdeploy&text=prod";
  const accepted = await g.post(form, {
    "content-type": FORM,
    "x-slack-request-timestamp": `${NOW - 10}`,
    "x-slack-signature": `v0=${hmac(`v0:${NOW - 10}:${form}`, "hex")}`,
  });
  assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
});

Deno.test("a copy of a signed Stripe or Standard Webhooks request with unsigned id headers added is a duplicate", async () => {
  await using g = await gateway();
  const stripe = new Stripe("sk_test_x");
  const event = JSON.stringify({ id: "evt_signed", type: "payment_intent.succeeded", data: {} });
  const stripeHeaders = {
    "content-type": "application/json",
    "stripe-signature": await stripe.webhooks.generateTestHeaderStringAsync({
      payload: event,
      secret: SECRET,
      timestamp: NOW - 5,
    }),
  };
  assert.equal((await g.post(event, stripeHeaders)).status, 202);
  const extras: Record<string, string>[] = [
    { "idempotency-key": "new-1" },
    { "x-github-delivery": "new-2" },
  ];
  for (const extra of extras) {
    const copy = await g.post(event, { ...stripeHeaders, ...extra, "x-github-event": "ping" });
    assert.equal(copy.status, 200, JSON.stringify(copy.body));
    assert.equal(copy.body.status, "duplicate", "not a pong, not a new event");
    assert.equal(copy.body.delivery_id, "evt_signed");
  }

  const body = JSON.stringify({ type: "invoice.paid", data: { n: 1 } });
  const id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";
  const standardHeaders = {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": `${NOW}`,
    "webhook-signature": `v1,${hmac(`${id}.${NOW}.${body}`, "base64")}`,
  };
  assert.equal((await g.post(body, standardHeaders)).status, 202);
  const copy = await g.post(body, { ...standardHeaders, "x-gitlab-event-uuid": "new-3" });
  assert.equal(copy.body.status, "duplicate", JSON.stringify(copy.body));

  const [standardEvent, stripeEvent] = await g.store.listEvents({ limit: 10 });
  assert.equal(standardEvent.source, "standard");
  assert.equal(standardEvent.eventLabel, "invoice.paid");
  assert.equal(stripeEvent.source, "stripe");
  assert.equal(await g.stored(), 2);
});

Deno.test("Linear: a stale webhookTimestamp is refused, and Linear-Delivery dedupes", async () => {
  await using g = await gateway();
  const send = (timestampMs: number, delivery: string) => {
    const body = JSON.stringify({ action: "create", type: "Issue", webhookTimestamp: timestampMs });
    return g.post(body, {
      "content-type": "application/json",
      "linear-signature": hmac(body, "hex"),
      "linear-delivery": delivery,
    });
  };
  const stale = await send(NOW_MS - 3_600_000, "d-old");
  assert.equal(stale.status, 401);
  assert.equal(stale.body.error, "invalid signature");
  assert.equal((await send(NOW_MS - 1000, "d-1")).status, 202);
  const again = await send(NOW_MS - 1000, "d-1");
  assert.equal(again.body.status, "duplicate");
  assert.equal(await g.stored(), 1);
});

Deno.test("a Linear request captured hours ago is refused under every scheme that signs the body alone", async () => {
  await using g = await gateway();
  const body = JSON.stringify({
    action: "create",
    type: "Issue",
    webhookTimestamp: NOW_MS - 7_200_000,
  });
  const json = { "content-type": "application/json" };
  assert.equal(
    (await g.post(body, { ...json, "linear-signature": hmac(body, "hex") })).status,
    401,
  );
  const replays: [string, Record<string, string>][] = [
    ["github", {
      "x-hub-signature-256": `sha256=${hmac(body, "hex")}`,
      "x-github-delivery": "r-1",
    }],
    ["shopify", { "x-shopify-hmac-sha256": hmac(body, "base64"), "x-shopify-webhook-id": "r-2" }],
    ["generic", { "x-webhook-signature": `sha256=${hmac(body, "hex")}`, "idempotency-key": "r-3" }],
  ];
  for (const [scheme, headers] of replays) {
    const replay = await g.post(body, { ...json, ...headers });
    assert.equal(replay.status, 401, `${scheme}: ${JSON.stringify(replay.body)}`);
    assert.equal(replay.body.error, "invalid signature");
  }
  // Within Linear's window the same body passes under them, as under Linear.
  const fresh = JSON.stringify({
    action: "create",
    type: "Issue",
    webhookTimestamp: NOW_MS - 1000,
  });
  const github = await g.post(fresh, {
    ...json,
    "x-hub-signature-256": `sha256=${hmac(fresh, "hex")}`,
    "x-github-delivery": "r-4",
  });
  assert.equal(github.status, 202, JSON.stringify(github.body));
  assert.equal(await g.stored(), 1);
});

Deno.test("a Standard Webhooks id of any length the signature check takes is the delivery id", async () => {
  await using g = await gateway();
  const body = JSON.stringify({ type: "invoice.paid", data: { n: 1 } });
  for (const id of ["m".repeat(201), "n".repeat(256)]) {
    const signature = new StandardWebhook(WHSEC).sign(id, new Date(NOW * 1000), body);
    const headers = {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": `${NOW}`,
      "webhook-signature": signature,
    };
    const first = await g.post(body, headers);
    assert.deepEqual([first.status, first.body.delivery_id], [202, id]);
    const again = await g.post(body, { ...headers, "idempotency-key": "new-1" });
    assert.equal(again.body.status, "duplicate", JSON.stringify(again.body));
  }
  const tooLong = "o".repeat(257);
  const signature = new StandardWebhook(WHSEC).sign(tooLong, new Date(NOW * 1000), body);
  const refused = await g.post(body, {
    "content-type": "application/json",
    "webhook-id": tooLong,
    "webhook-timestamp": `${NOW}`,
    "webhook-signature": signature,
  });
  assert.equal(refused.status, 401);
  assert.equal(await g.stored(), 2);
});

Deno.test("a Stripe request re-sent as generic V2 is a duplicate of itself, typed by its payload", async () => {
  await using g = await gateway();
  const stripe = new Stripe("sk_test_x");
  const event = JSON.stringify({
    id: "evt_captured",
    object: "event",
    type: "payment_intent.succeeded",
    data: {},
  });
  const header = await stripe.webhooks.generateTestHeaderStringAsync({
    payload: event,
    secret: SECRET,
    timestamp: NOW - 5,
  });
  const json = { "content-type": "application/json" };
  assert.equal((await g.post(event, { ...json, "stripe-signature": header })).status, 202);
  const [, t, v1] = header.match(/t=(\d+),v1=([0-9a-f]+)/)!;
  for (const key of ["new-1", "new-2"]) {
    const copy = await g.post(event, {
      ...json,
      "x-webhook-signature-v2": v1,
      "x-webhook-timestamp": t,
      "idempotency-key": key,
      "x-github-event": "issues",
    });
    assert.equal(copy.status, 200, JSON.stringify(copy.body));
    assert.equal(copy.body.status, "duplicate");
    assert.equal(copy.body.delivery_id, "evt_captured");
  }
  // A first copy arriving under generic V2 is still the Stripe event it is.
  const other = JSON.stringify({ id: "evt_other", object: "event", type: "charge.failed" });
  const ts = `${NOW}`;
  const first = await g.post(other, {
    ...json,
    "x-webhook-signature-v2": hmac(`${ts}.${other}`, "hex"),
    "x-webhook-timestamp": ts,
    "x-github-event": "issues",
  });
  assert.equal(first.status, 202, JSON.stringify(first.body));
  const [stored] = await g.store.listEvents({ limit: 1 });
  assert.equal(stored.eventLabel, "charge.failed");
  assert.equal(stored.source, "stripe");
  assert.equal(stored.deliveryId, "evt_other");
  assert.equal(await g.stored(), 2);
});

Deno.test("Slack's url_verification challenge is answered, and not dispatched", async () => {
  await using g = await gateway();
  const body = JSON.stringify({
    type: "url_verification",
    challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
    token: "x",
  });
  const answer = await g.post(body, {
    "content-type": "application/json",
    "x-slack-request-timestamp": `${NOW}`,
    "x-slack-signature": `v0=${hmac(`v0:${NOW}:${body}`, "hex")}`,
  });
  assert.equal(answer.status, 200);
  assert.deepEqual(answer.body, {
    challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
  });
  assert.equal(await g.stored(), 0);
});

Deno.test("a signed text cannot be re-cut into a Standard Webhooks request at a planted .<timestamp>.", async () => {
  await using g = await gateway();
  // An issue title the attacker wrote, inside a body Linear signed an hour ago.
  const planted = `x.${NOW}.payload=%7B%22type%22%3A%22deploy%22%7D&`;
  const captured = JSON.stringify({ type: "Issue", data: { title: planted }, webhookTimestamp: 1 });
  const cut = captured.indexOf(`.${NOW}.`);
  const forged = await g.post(captured.slice(cut + `.${NOW}.`.length), {
    "content-type": FORM,
    "webhook-id": captured.slice(0, cut),
    "webhook-timestamp": `${NOW}`,
    "webhook-signature": `v1,${hmac(captured, "base64")}`,
  });
  assert.notEqual(forged.status, 202, JSON.stringify(forged.body));
  // Even a plain id with a dot is refused: it could split the signed text another way.
  const body = JSON.stringify({ type: "invoice.paid" });
  const dotted = await g.post(body, {
    "content-type": "application/json",
    "webhook-id": "msg.1",
    "webhook-timestamp": `${NOW}`,
    "webhook-signature": `v1,${hmac(`msg.1.${NOW}.${body}`, "base64")}`,
  });
  assert.equal(dotted.status, 401);
  assert.equal(await g.stored(), 0);
});

Deno.test("a Svix request with an unsigned webhook-id added is still a duplicate of itself", async () => {
  await using g = await gateway();
  const body = JSON.stringify({ type: "user.created" });
  const headers = {
    "content-type": "application/json",
    "svix-id": "msg_svix1",
    "svix-timestamp": `${NOW}`,
    "svix-signature": `v1,${hmac(`msg_svix1.${NOW}.${body}`, "base64")}`,
  };
  assert.equal((await g.post(body, headers)).status, 202);
  const copy = await g.post(body, { ...headers, "webhook-id": "fresh-unsigned" });
  assert.equal(copy.body.status, "duplicate", JSON.stringify(copy.body));
  assert.equal(copy.body.delivery_id, "msg_svix1");
});

Deno.test("a generic V2 form is accepted, and a Slack-signed null body is not a 500", async () => {
  await using g = await gateway();
  const form = "sensor=t1&value=21.5";
  const v2 = await g.post(form, {
    "content-type": FORM,
    "x-webhook-timestamp": `${NOW}`,
    "x-webhook-signature-v2": `sha256=${hmac(`${NOW}.${form}`, "hex")}`,
  });
  assert.equal(v2.status, 202, JSON.stringify(v2.body));
  const nothing = await g.post("null", {
    "content-type": "application/json",
    "x-github-event": "url_verification",
    "x-slack-request-timestamp": `${NOW}`,
    "x-slack-signature": `v0=${hmac(`v0:${NOW}:null`, "hex")}`,
  });
  assert.notEqual(nothing.status, 500);
  assert.equal(nothing.body.challenge, undefined);
});
