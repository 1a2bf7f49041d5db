/**
 * What of a request's headers is stored with its event: every header, but the values that can
 * carry a credential, redacted by name, for every scheme of docs/signatures.md; and the scheme
 * that verified the request, stored through the real app into a real SQLite store.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { createMemoryRateLimiter } from "../../../lib/subscriptions/rate_limit.ts";
import { createSignatureVerifier, SCHEME_NAMES, signRequest } from "../../../lib/signatures/mod.ts";
import { REDACTED } from "../../../lib/state/mod.ts";
import { openStateStore } from "../../../lib/state/sqlite/mod.ts";
import type { Route } from "../../../lib/subscriptions/mod.ts";
import { createApp } from "../../../server/app.ts";
import { redactedHeaders } from "../../../server/ingest/_auth.ts";
import { directWorker } from "../../fakes/direct_worker.ts";

const SECRET = "headers-secret-0123456789";
const NOW = Date.parse("2026-11-21T12:00:00Z");
const BODY = JSON.stringify({ action: "opened", issue: { number: 1 } });

Deno.test("redactedHeaders() redacts the signature or token header of every scheme, keeping its name", () => {
  const options = { deliveryId: "d-1", nowSeconds: Math.floor(NOW / 1000) };
  for (const scheme of SCHEME_NAMES) {
    const signed = signRequest(scheme, SECRET, BODY, options)!;
    const other = signRequest(scheme, `${SECRET}-other`, BODY, options)!;
    const stored = redactedHeaders(new Headers(signed));
    // What a secret changes is made from it: the signature, or the token itself.
    const secretMade = Object.keys(signed).filter((name) => signed[name] !== other[name]);
    assert.ok(secretMade.length > 0, scheme);
    for (const name of secretMade) assert.equal(stored[name], REDACTED, `${scheme}: ${name}`);
    for (const name of Object.keys(signed).filter((name) => !secretMade.includes(name))) {
      assert.equal(stored[name], signed[name], `${scheme}: ${name} (a time or an id) is kept`);
    }
    assert.ok(!JSON.stringify(stored).includes(SECRET), scheme);
  }
});

Deno.test("redactedHeaders() redacts credentials by name and keeps the other headers", () => {
  const stored = redactedHeaders(
    new Headers({
      "Authorization": "Basic dXNlcjpwYXNz",
      "Proxy-Authorization": "Bearer proxy-token",
      "Cookie": "session=abc",
      "X-Api-Key": "key-123",
      "X-Auth-Token": "tok-456",
      "X-Hub-Signature": "sha1=0123",
      "Content-Type": "application/json",
      "User-Agent": "GitHub-Hookshot/abc123",
      "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    }),
  );
  assert.deepEqual(stored, {
    "authorization": REDACTED,
    "content-type": "application/json",
    "cookie": REDACTED,
    "proxy-authorization": REDACTED,
    "user-agent": "GitHub-Hookshot/abc123",
    "x-api-key": REDACTED,
    "x-auth-token": REDACTED,
    "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    "x-hub-signature": REDACTED,
  });
});

Deno.test("redactedHeaders() cuts a long value and keeps at most 64 headers", () => {
  const headers = new Headers({ "x-long": "v".repeat(5000) });
  for (let i = 0; i < 100; i++) headers.set(`x-extra-${String(i).padStart(3, "0")}`, "1");
  const stored = redactedHeaders(headers);
  assert.equal(Object.keys(stored).length, 64);
  assert.equal(stored["x-long"], undefined, "sorted after the x-extra- ones, past the 64th");
  const one = redactedHeaders(new Headers({ "x-long": "v".repeat(5000) }));
  assert.equal(one["x-long"], `${"v".repeat(1024)}… (5000 characters)`);
});

/** The app over a real store, with a GitHub subscription and a bearer-token one. */
async function withApp(
  body: (
    request: (path: string, init: RequestInit) => Promise<Response>,
    store: ReturnType<
      typeof openStateStore
    >,
  ) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "agent-headers-" });
  const store = openStateStore(join(dir, "gateway.db"));
  const routes = new Map<string, Route>([
    ["gh", { name: "gh", origin: "dynamic", secret: SECRET, prompt: "Issue {issue.number}" }],
    ["tok", { name: "tok", origin: "dynamic", secret: SECRET, auth: "bearer" }],
  ]);
  const direct = directWorker(store, () => Promise.reject(new Error("no direct route")));
  const app = createApp({
    findRoute: (name) => routes.get(name),
    maxBodyBytes: 4096,
    rateLimitPerMinute: 60,
    verifier: createSignatureVerifier(),
    rateLimiter: createMemoryRateLimiter(),
    store,
    onAccepted: () => {},
    deliverNow: (event, payload) => direct.deliverNow(event, payload),
    now: () => NOW,
    newId: () => crypto.randomUUID(),
  });
  try {
    await body((path, init) => Promise.resolve(app.request(path, init)), store);
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("an accepted event is stored with its headers, credentials redacted, and the scheme that verified it", async () => {
  await withApp(async (request, store) => {
    const github = await request("/webhooks/gh", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "issues",
        "x-github-delivery": "d-gh",
        "x-hub-signature-256": await sign(SECRET, BODY),
      },
      body: BODY,
    });
    assert.equal(github.status, 202);
    await github.body?.cancel();
    const token = await request("/webhooks/tok", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${SECRET}` },
      body: BODY,
    });
    assert.equal(token.status, 202);
    await token.body?.cancel();
    const [fromToken, fromGitHub] = await store.listEvents({});
    assert.equal(fromGitHub.scheme, "github");
    assert.deepEqual(fromGitHub.headers, {
      "content-type": "application/json",
      "x-github-delivery": "d-gh",
      "x-github-event": "issues",
      "x-hub-signature-256": REDACTED,
    });
    assert.equal(fromToken.scheme, "bearer");
    assert.equal(fromToken.headers?.authorization, REDACTED);
    const stored = JSON.stringify(await store.lineage(fromToken.id));
    assert.ok(!stored.includes(SECRET), "the token is nowhere in the lineage");
  });
});
