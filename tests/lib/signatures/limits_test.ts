import assert from "node:assert/strict";
import {
  createSignatureVerifier,
  MAX_HEADER_CHARS,
  MAX_SIGNATURES,
} from "../../../lib/signatures/mod.ts";
import { BODY, bytes, hmac, NOW, OTHER_SECRET, SECRET } from "../../fakes/senders.ts";

const verifier = createSignatureVerifier();
const good = `v1=${hmac(SECRET, `${NOW}.${BODY}`, "hex")}`;
const wrong = `v1=${hmac(OTHER_SECRET, `${NOW}.${BODY}`, "hex")}`;

function stripe(value: string) {
  return verifier.verify({
    headers: new Headers({ "Stripe-Signature": value }),
    body: bytes(BODY),
    secrets: [SECRET],
    nowSeconds: NOW,
  });
}

Deno.test(`verify() reads a header of exactly MAX_HEADER_CHARS and refuses one character more`, async () => {
  const head = `t=${NOW},${good},x=`;
  const fits = head + "a".repeat(MAX_HEADER_CHARS - head.length);
  assert.deepEqual(await stripe(fits), { ok: true, scheme: "stripe" });
  assert.deepEqual(await stripe(`${fits}a`), { ok: false, scheme: "stripe", reason: "invalid" });
});

Deno.test(`verify() tries up to MAX_SIGNATURES entries of one header and refuses more`, async () => {
  const entries = (count: number) => [...Array(count - 1).fill(wrong), good].join(",");
  assert.deepEqual(await stripe(`t=${NOW},${entries(MAX_SIGNATURES)}`), {
    ok: true,
    scheme: "stripe",
  });
  assert.deepEqual(await stripe(`t=${NOW},${entries(MAX_SIGNATURES + 1)}`), {
    ok: false,
    scheme: "stripe",
    reason: "invalid",
  });
});

Deno.test("verify() refuses a Stripe header with no t, two t values, or no v1", async () => {
  for (const value of [good, `t=${NOW},t=${NOW},${good}`, `t=${NOW},v0=${good.slice(3)}`]) {
    assert.deepEqual(
      await stripe(value),
      { ok: false, scheme: "stripe", reason: "invalid" },
      value,
    );
  }
});

Deno.test("verify() ignores Stripe items without '=' and spaces after commas", async () => {
  assert.deepEqual(await stripe(`t=${NOW}, junk, ${good}`), { ok: true, scheme: "stripe" });
});

Deno.test("verify() checks a body that views part of a larger buffer", async () => {
  const framed = bytes(`xx${BODY}yy`);
  const body = framed.subarray(2, framed.length - 2);
  const result = await verifier.verify({
    headers: new Headers({ "X-Hub-Signature-256": `sha256=${hmac(SECRET, BODY, "hex")}` }),
    body,
    secrets: [SECRET],
    nowSeconds: NOW,
  });
  assert.deepEqual(result, { ok: true, scheme: "github" });
});

Deno.test("verify() checks a body held in a SharedArrayBuffer", async () => {
  const shared = new Uint8Array(new SharedArrayBuffer(bytes(BODY).length));
  shared.set(bytes(BODY));
  const result = await verifier.verify({
    headers: new Headers({ "Linear-Signature": hmac(SECRET, BODY, "hex") }),
    body: shared,
    secrets: [SECRET],
    nowSeconds: NOW,
  });
  assert.deepEqual(result, { ok: true, scheme: "linear" });
});

Deno.test("verify() keeps verifying correctly when the key cache holds a single key", async () => {
  const tiny = createSignatureVerifier({ maxCachedKeys: 1 });
  const secrets = [OTHER_SECRET, SECRET];
  for (let round = 0; round < 3; round++) {
    for (const secret of secrets) {
      const result = await tiny.verify({
        headers: new Headers({ "X-Hub-Signature-256": `sha256=${hmac(secret, BODY, "hex")}` }),
        body: bytes(BODY),
        secrets,
        nowSeconds: NOW,
      });
      assert.deepEqual(result, { ok: true, scheme: "github" });
    }
  }
});
