import assert from "node:assert/strict";
import { createSignatureVerifier } from "../../../lib/signatures/mod.ts";
import { bytes } from "../../fakes/senders.ts";

// GitHub's documented vector:
// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
const GITHUB_SECRET = "It's a Secret to Everybody";
const GITHUB_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

// The Standard Webhooks libraries' signing vector ("sign function works" in their test suites).
const STANDARD = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};

// Slack's documented example: https://api.slack.com/authentication/verifying-requests-from-slack
const SLACK = {
  secret: "8f742231b10e8888abcd99yyyzzz85a5",
  timestamp: 1531420618,
  body: "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&" +
    "channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&" +
    "command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2F" +
    "T1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&" +
    "trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c",
  signature: "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
};

Deno.test("verify() accepts GitHub's documented X-Hub-Signature-256 vector", async () => {
  const result = await createSignatureVerifier().verify({
    headers: new Headers({ "X-Hub-Signature-256": GITHUB_SIGNATURE }),
    body: bytes("Hello, World!"),
    secrets: [GITHUB_SECRET],
    nowSeconds: 0,
  });
  assert.deepEqual(result, { ok: true, scheme: "github" });
});

Deno.test("verify() rejects GitHub's documented vector with one body byte changed", async () => {
  const result = await createSignatureVerifier().verify({
    headers: new Headers({ "X-Hub-Signature-256": GITHUB_SIGNATURE }),
    body: bytes("Hello, World?"),
    secrets: [GITHUB_SECRET],
    nowSeconds: 0,
  });
  assert.deepEqual(result, { ok: false, scheme: "github", reason: "invalid" });
});

Deno.test("verify() accepts the Standard Webhooks library vector with a whsec_ secret", async () => {
  const result = await createSignatureVerifier().verify({
    headers: new Headers({
      "webhook-id": STANDARD.id,
      "webhook-timestamp": String(STANDARD.timestamp),
      "webhook-signature": STANDARD.signature,
    }),
    body: bytes(STANDARD.body),
    secrets: [STANDARD.secret],
    nowSeconds: STANDARD.timestamp + 299,
  });
  assert.deepEqual(result, { ok: true, scheme: "standard" });
});

Deno.test("verify() accepts the Standard Webhooks vector under svix-* headers", async () => {
  const result = await createSignatureVerifier().verify({
    headers: new Headers({
      "svix-id": STANDARD.id,
      "svix-timestamp": String(STANDARD.timestamp),
      "svix-signature": STANDARD.signature,
    }),
    body: bytes(STANDARD.body),
    secrets: [STANDARD.secret],
    nowSeconds: STANDARD.timestamp,
  });
  assert.deepEqual(result, { ok: true, scheme: "standard" });
});

Deno.test("verify() uses a Standard Webhooks secret without whsec_ as UTF-8, not base64", async () => {
  const result = await createSignatureVerifier().verify({
    headers: new Headers({
      "webhook-id": STANDARD.id,
      "webhook-timestamp": String(STANDARD.timestamp),
      "webhook-signature": STANDARD.signature,
    }),
    body: bytes(STANDARD.body),
    secrets: [STANDARD.secret.slice("whsec_".length)],
    nowSeconds: STANDARD.timestamp,
  });
  assert.deepEqual(result, { ok: false, scheme: "standard", reason: "invalid" });
});

Deno.test("verify() accepts Slack's documented request signature example", async () => {
  const result = await createSignatureVerifier().verify({
    headers: new Headers({
      "X-Slack-Request-Timestamp": String(SLACK.timestamp),
      "X-Slack-Signature": SLACK.signature,
    }),
    body: bytes(SLACK.body),
    secrets: [SLACK.secret],
    nowSeconds: SLACK.timestamp,
  });
  assert.deepEqual(result, { ok: true, scheme: "slack" });
});

Deno.test("verify() rejects Slack's documented example replayed 301 s later as stale", async () => {
  const result = await createSignatureVerifier().verify({
    headers: new Headers({
      "X-Slack-Request-Timestamp": String(SLACK.timestamp),
      "X-Slack-Signature": SLACK.signature,
    }),
    body: bytes(SLACK.body),
    secrets: [SLACK.secret],
    nowSeconds: SLACK.timestamp + 301,
  });
  assert.deepEqual(result, { ok: false, scheme: "slack", reason: "stale" });
});
