import assert from "node:assert/strict";
import {
  createSignatureVerifier,
  detectScheme,
  SCHEME_NAMES,
  type VerifyRequest,
} from "../../../lib/signatures/mod.ts";
import {
  BODY,
  bytes,
  NOW,
  OTHER_SECRET,
  SECRET,
  type Sender,
  SENDERS,
} from "../../fakes/senders.ts";

const verifier = createSignatureVerifier();
const sender = (label: string): Sender => SENDERS.find((s) => s.label === label)!;
const sign = (label: string, secret = SECRET) =>
  sender(label).sign({ secret, body: BODY, timestamp: NOW });

function request(headers: HeadersInit, only?: VerifyRequest["only"]): VerifyRequest {
  return {
    headers: new Headers(headers),
    body: bytes(BODY),
    secrets: [SECRET],
    nowSeconds: NOW,
    only,
  };
}

Deno.test("SCHEME_NAMES lists the nine schemes in docs/signatures.md order", () => {
  assert.deepEqual(SCHEME_NAMES, [
    "github",
    "gitlab",
    "standard",
    "stripe",
    "slack",
    "shopify",
    "linear",
    "generic",
    "bearer",
  ]);
});

Deno.test("detectScheme() names the scheme of each sender's headers", () => {
  for (const s of SENDERS) {
    assert.equal(detectScheme(new Headers(sign(s.label))), s.scheme, s.label);
  }
});

Deno.test("detectScheme() returns null when no known header is present", () => {
  assert.equal(detectScheme(new Headers()), null);
  assert.equal(
    detectScheme(new Headers({ "content-type": "application/json", "webhook-id": "msg_1" })),
    null,
  );
});

Deno.test("detectScheme() follows table order when several schemes' headers are present", () => {
  const all = Object.assign({}, ...SENDERS.map((s) => sign(s.label)));
  assert.equal(detectScheme(new Headers(all)), "github");
  const { "X-Hub-Signature-256": _github, "X-Gitlab-Token": _gitlab, ...rest } = all;
  assert.equal(detectScheme(new Headers(rest)), "standard");
});

Deno.test("verify() answers missing with no scheme when no known header is present", async () => {
  assert.deepEqual(await verifier.verify(request({ "content-type": "application/json" })), {
    ok: false,
    scheme: null,
    reason: "missing",
  });
});

Deno.test("verify() does not fall back to bearer when a wrong GitHub signature is present", async () => {
  const headers = { ...sign("github", OTHER_SECRET), ...sign("bearer") };
  assert.deepEqual(await verifier.verify(request(headers)), {
    ok: false,
    scheme: "github",
    reason: "invalid",
  });
});

Deno.test("verify() decides on GitHub when it is right and a later scheme is wrong", async () => {
  const headers = {
    ...sign("github"),
    ...sign("bearer", OTHER_SECRET),
    ...sign("stripe", OTHER_SECRET),
  };
  assert.deepEqual(await verifier.verify(request(headers)), { ok: true, scheme: "github" });
});

Deno.test("verify() commits to a present header even when its value is malformed", async () => {
  const headers = { "Linear-Signature": "not hex", ...sign("generic-v1") };
  assert.deepEqual(await verifier.verify(request(headers)), {
    ok: false,
    scheme: "linear",
    reason: "invalid",
  });
});

Deno.test("verify() with a pinned scheme ignores the headers of earlier schemes", async () => {
  const headers = { ...sign("github", OTHER_SECRET), ...sign("stripe") };
  assert.deepEqual(await verifier.verify(request(headers, "stripe")), {
    ok: true,
    scheme: "stripe",
  });
  assert.deepEqual(await verifier.verify(request(headers, "slack")), {
    ok: false,
    scheme: "slack",
    reason: "missing",
  });
});

Deno.test("verify() checks Generic V2 and ignores the legacy header next to it", async () => {
  const headers = { ...sign("generic-v2"), "X-Webhook-Signature": "0".repeat(64) };
  assert.deepEqual(await verifier.verify(request(headers)), { ok: true, scheme: "generic" });
  const broken = { ...sign("generic-v1"), "X-Webhook-Signature-V2": "0".repeat(64) };
  assert.deepEqual(await verifier.verify(request(broken)), {
    ok: false,
    scheme: "generic",
    reason: "invalid",
  });
});

Deno.test("verify() accepts the Generic signatures with or without the sha256= prefix", async () => {
  for (const label of ["generic-v1", "generic-v2"]) {
    const headers = sign(label);
    const header = sender(label).header;
    const value = headers[header];
    const flipped = value.startsWith("sha256=") ? value.slice(7) : `sha256=${value}`;
    const result = await verifier.verify(request({ ...headers, [header]: flipped }));
    assert.deepEqual(result, { ok: true, scheme: "generic" }, label);
  }
});

Deno.test("verify() takes the webhook-* family when svix-* headers are also present", async () => {
  const headers = { ...sign("standard"), ...sign("svix", OTHER_SECRET) };
  assert.deepEqual(await verifier.verify(request(headers)), { ok: true, scheme: "standard" });
});

Deno.test("verify() rejects a Standard Webhooks signature without its webhook-id", async () => {
  const { "webhook-id": _id, ...headers } = sign("standard");
  assert.deepEqual(await verifier.verify(request(headers)), {
    ok: false,
    scheme: "standard",
    reason: "invalid",
  });
});

Deno.test("verify() accepts one valid entry among several Standard Webhooks signatures", async () => {
  const good = sign("standard")["webhook-signature"];
  const wrong = sign("standard", OTHER_SECRET)["webhook-signature"];
  const list = `v1a,${"A".repeat(86)}== ${wrong} v2,${good.slice(3)} v1,%%% ${good}`;
  const result = await verifier.verify(request({ ...sign("standard"), "webhook-signature": list }));
  assert.deepEqual(result, { ok: true, scheme: "standard" });
  const onlyWrong = `${wrong} v1a,${good.slice(3)}`;
  assert.deepEqual(
    await verifier.verify(request({ ...sign("standard"), "webhook-signature": onlyWrong })),
    { ok: false, scheme: "standard", reason: "invalid" },
  );
});

Deno.test("verify() reads the Bearer keyword case-insensitively and refuses other auth schemes", async () => {
  const token = SECRET;
  assert.deepEqual(await verifier.verify(request({ Authorization: `bearer ${token}` })), {
    ok: true,
    scheme: "bearer",
  });
  for (const value of [`Basic ${btoa(`user:${token}`)}`, token, `Bearer ${token} extra`]) {
    assert.deepEqual(await verifier.verify(request({ Authorization: value })), {
      ok: false,
      scheme: "bearer",
      reason: "invalid",
    }, value);
  }
});

Deno.test("verify() matches a Bearer secret with blanks in it, whole and only whole", async () => {
  const secret = "It's a Secret to Everybody";
  const verify = (value: string) =>
    verifier.verify({ ...request({ Authorization: value }), secrets: [secret] });
  assert.deepEqual(await verify(`Bearer ${secret}`), { ok: true, scheme: "bearer" });
  for (const value of ["Bearer It's", `Bearer ${secret} x`, "Bearer Secret to Everybody"]) {
    assert.deepEqual(await verify(value), { ok: false, scheme: "bearer", reason: "invalid" });
  }
});

Deno.test("verify() refuses a GitLab token that is a prefix or extension of the secret", async () => {
  for (const value of [SECRET.slice(0, -1), `${SECRET}x`, SECRET.toUpperCase()]) {
    assert.deepEqual(await verifier.verify(request({ "X-Gitlab-Token": value })), {
      ok: false,
      scheme: "gitlab",
      reason: "invalid",
    }, value);
  }
});

Deno.test("verify() never throws for header values a Headers object cannot even hold", async () => {
  class LooseHeaders extends Headers {
    override get(name: string): string | null {
      return super.has(name) ? "v1,\u2603\ud800 sha256=\u0000\n" : null;
    }
  }
  for (const s of SENDERS) {
    const headers = new LooseHeaders(sign(s.label));
    const result = await verifier.verify({
      headers,
      body: bytes(BODY),
      secrets: [SECRET],
      nowSeconds: NOW,
    });
    assert.deepEqual(result, { ok: false, scheme: s.scheme, reason: "invalid" }, s.label);
  }
});

Deno.test("verify() turns a failure inside a scheme into invalid instead of throwing", async () => {
  class ThrowingHeaders extends Headers {
    override get(): string | null {
      throw new TypeError("broken header store");
    }
  }
  const headers = new ThrowingHeaders(sign("stripe"));
  const result = await verifier.verify({
    headers,
    body: bytes(BODY),
    secrets: [SECRET],
    nowSeconds: NOW,
  });
  assert.deepEqual(result, { ok: false, scheme: "stripe", reason: "invalid" });
});

Deno.test("createSignatureVerifier() refuses a negative tolerance or an empty key cache", () => {
  assert.throws(() => createSignatureVerifier({ toleranceSeconds: -1 }), RangeError);
  assert.throws(() => createSignatureVerifier({ toleranceSeconds: Number.NaN }), RangeError);
  assert.throws(() => createSignatureVerifier({ maxCachedKeys: 0 }), RangeError);
});
