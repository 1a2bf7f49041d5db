import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createSignatureVerifier, type VerifyResult } from "../../../lib/signatures/mod.ts";
import {
  BODY,
  bytes,
  hmac,
  NOW,
  OLD_SECRET,
  OTHER_SECRET,
  SECRET,
  type Sender,
  SENDERS,
} from "../../fakes/senders.ts";

const verifier = createSignatureVerifier();

function check(
  headers: Record<string, string>,
  options: { body?: string; secrets?: string[]; nowSeconds?: number } = {},
): Promise<VerifyResult> {
  return verifier.verify({
    headers: new Headers(headers),
    body: bytes(options.body ?? BODY),
    secrets: options.secrets ?? [SECRET],
    nowSeconds: options.nowSeconds ?? NOW,
  });
}

function signed(sender: Sender, overrides: { secret?: string; timestamp?: number } = {}) {
  return sender.sign({
    secret: overrides.secret ?? SECRET,
    body: BODY,
    timestamp: overrides.timestamp ?? NOW,
  });
}

const invalid = (sender: Sender) => ({ ok: false, scheme: sender.scheme, reason: "invalid" });

for (const sender of SENDERS) {
  const name = sender.label;

  Deno.test(`verify() accepts a well-signed ${name} request`, async () => {
    assert.deepEqual(await check(signed(sender)), { ok: true, scheme: sender.scheme });
  });

  Deno.test(`verify() rejects a ${name} request signed with a wrong secret`, async () => {
    assert.deepEqual(await check(signed(sender, { secret: OTHER_SECRET })), invalid(sender));
  });

  Deno.test(`verify() accepts a ${name} request signed with a previous secret still in grace`, async () => {
    const headers = signed(sender, { secret: OLD_SECRET });
    assert.deepEqual(await check(headers, { secrets: [SECRET, OLD_SECRET] }), {
      ok: true,
      scheme: sender.scheme,
    });
    assert.deepEqual(await check(headers, { secrets: [SECRET] }), invalid(sender));
  });

  Deno.test(`verify() rejects a ${name} request when no secret is given`, async () => {
    assert.deepEqual(await check(signed(sender), { secrets: [] }), invalid(sender));
    assert.deepEqual(
      await check(signed(sender, { secret: "" }), { secrets: [""] }),
      invalid(sender),
    );
  });

  Deno.test(`verify() ${sender.coversBody ? "rejects" : "cannot see"} a tampered body under ${name}`, async () => {
    const result = await check(signed(sender), { body: BODY.replace('"n":1', '"n":2') });
    assert.deepEqual(
      result,
      sender.coversBody ? invalid(sender) : { ok: true, scheme: sender.scheme },
    );
  });

  Deno.test(`verify() rejects a malformed ${name} header`, async () => {
    for (const value of ["", "garbage", "sha256=", "v1,", "t=1,v1=zz", "=", ",,,"]) {
      const headers = { ...signed(sender), [sender.header]: value };
      assert.deepEqual(await check(headers), invalid(sender), JSON.stringify(value));
    }
  });

  Deno.test(`verify() rejects a 64 KB ${name} header quickly`, async () => {
    const request = {
      headers: new Headers({ ...signed(sender), [sender.header]: "a".repeat(64 * 1024) }),
      body: bytes(BODY),
      secrets: [SECRET],
      nowSeconds: NOW,
    };
    const started = performance.now();
    for (let i = 0; i < 1000; i++) {
      assert.deepEqual(await verifier.verify(request), invalid(sender));
    }
    assert.ok(performance.now() - started < 1000, "1,000 rejections took over a second");
  });

  Deno.test(`verify() rejects non-ASCII bytes in any ${name} header without throwing`, async () => {
    const headers = signed(sender);
    for (const [header, value] of Object.entries(headers)) {
      for (const bad of ["\u00e9", "\u0080", "\u00ff", "\u0001", "\u007f"]) {
        assert.deepEqual(
          await check({ ...headers, [header]: value + bad }),
          invalid(sender),
          header,
        );
      }
    }
  });

  Deno.test(`verify() refuses a ${name} request when another scheme is pinned`, async () => {
    const pinned = sender.scheme === "github" ? "bearer" : "github";
    const result = await verifier.verify({
      headers: new Headers(signed(sender)),
      body: bytes(BODY),
      secrets: [SECRET],
      nowSeconds: NOW,
      only: pinned,
    });
    assert.deepEqual(result, { ok: false, scheme: pinned, reason: "missing" });
  });

  Deno.test(`verify() accepts a ${name} request pinned to its own scheme`, async () => {
    const result = await verifier.verify({
      headers: new Headers(signed(sender)),
      body: bytes(BODY),
      secrets: [SECRET],
      nowSeconds: NOW,
      only: sender.scheme,
    });
    assert.deepEqual(result, { ok: true, scheme: sender.scheme });
  });

  if (!sender.timed) continue;

  Deno.test(`verify() rejects ${name} timestamps 301 s in the past or future as stale`, async () => {
    const stale = { ok: false, scheme: sender.scheme, reason: "stale" };
    assert.deepEqual(await check(signed(sender, { timestamp: NOW - 301 })), stale);
    assert.deepEqual(await check(signed(sender, { timestamp: NOW + 301 })), stale);
  });

  Deno.test(`verify() accepts ${name} timestamps exactly 300 s from the clock`, async () => {
    const ok = { ok: true, scheme: sender.scheme };
    assert.deepEqual(await check(signed(sender, { timestamp: NOW - 300 })), ok);
    assert.deepEqual(await check(signed(sender, { timestamp: NOW + 300 })), ok);
  });

  Deno.test(`verify() rejects a ${name} request with a non-numeric or missing timestamp`, async () => {
    const headers = signed(sender);
    const tsHeader = Object.keys(headers).find((h) => /timestamp/i.test(h));
    if (tsHeader === undefined) {
      const value = headers[sender.header].replace(`t=${NOW}`, "t=17e8");
      assert.deepEqual(await check({ [sender.header]: value }), invalid(sender));
      return;
    }
    assert.deepEqual(await check({ ...headers, [tsHeader]: "17e8" }), invalid(sender));
    const { [tsHeader]: _dropped, ...rest } = headers;
    assert.deepEqual(await check(rest), invalid(sender));
  });
}

Deno.test("verify() honours a custom toleranceSeconds", async () => {
  const strict = createSignatureVerifier({ toleranceSeconds: 5 });
  const headers = SENDERS.find((s) => s.label === "stripe")!.sign({
    secret: SECRET,
    body: BODY,
    timestamp: NOW - 6,
  });
  const request = { headers: new Headers(headers), body: bytes(BODY), secrets: [SECRET] };
  assert.equal((await strict.verify({ ...request, nowSeconds: NOW })).ok, false);
  assert.equal((await strict.verify({ ...request, nowSeconds: NOW - 1 })).ok, true);
});

Deno.test("verify() refuses a non-ASCII token even when it equals the configured secret", async () => {
  const cases: Record<string, string>[] = [
    { "X-Gitlab-Token": "s\u00e9cret" },
    { Authorization: "Bearer s\u00e9cret" },
  ];
  for (const headers of cases) {
    const result = await check(headers, { secrets: ["s\u00e9cret"] });
    assert.equal(result.ok, false, JSON.stringify(headers));
  }
});

Deno.test("verify() refuses a non-ASCII webhook-id even when the signature covers it", async () => {
  const id = "msg_\u00e9";
  const key = new Uint8Array(Buffer.from(SECRET.slice("whsec_".length), "base64"));
  const signature = hmac(key, `${id}.${NOW}.${BODY}`, "base64");
  const headers = {
    "webhook-id": id,
    "webhook-timestamp": String(NOW),
    "webhook-signature": `v1,${signature}`,
  };
  assert.deepEqual(await check(headers), { ok: false, scheme: "standard", reason: "invalid" });
});
