/**
 * What the webhook handler tells the metrics (docs/metrics.md): each answer under the name of a
 * subscription the gateway serves, and every other name under one label, whichever way the
 * request is refused; each event's fate from the dispatch steps.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { EventOutcome, MetricsRecorder } from "../../../lib/metrics/mod.ts";
import { createSignatureVerifier } from "../../../lib/signatures/mod.ts";
import { openStateStore } from "../../../lib/state/sqlite/mod.ts";
import { createMemoryRateLimiter } from "../../../lib/subscriptions/rate_limit.ts";
import type { Route } from "../../../lib/subscriptions/mod.ts";
import { createApp } from "../../../server/app.ts";
import { signedIssue } from "../../_helpers.ts";

const SECRET = "metrics-secret-0123456789";

/** The in-process app on a real store, with a recorder that keeps what it is told. */
async function recordedApp() {
  const dir = await Deno.makeTempDir({ prefix: "agent-ingest-metrics-" });
  const store = openStateStore(join(dir, "gateway.db"), { backgroundCheckpoints: false });
  const routes = new Map<string, Route>([
    ["gh", { name: "gh", origin: "dynamic", secret: SECRET }],
    ["pushes", { name: "pushes", origin: "dynamic", secret: SECRET, events: ["push"] }],
  ]);
  const requests: [string | null, number][] = [];
  const events: [string, EventOutcome][] = [];
  const metrics: Pick<MetricsRecorder, "webhookRequest" | "event"> = {
    webhookRequest: (subscription, status) => void requests.push([subscription, status]),
    event: (subscription, outcome) => void events.push([subscription, outcome]),
  };
  const app = createApp({
    findRoute(name) {
      if (name === "broken") throw new Error("the route table broke");
      return routes.get(name);
    },
    maxBodyBytes: 4096,
    rateLimitPerMinute: 60,
    verifier: createSignatureVerifier(),
    rateLimiter: createMemoryRateLimiter(),
    store,
    onAccepted: () => {},
    deliverNow: () => Promise.reject(new Error("no direct delivery here")),
    now: Date.now,
    newId: () => crypto.randomUUID(),
    metrics,
  });
  const status = async (path: string, init?: RequestInit) => {
    const response = await app.request(path, init);
    await response.body?.cancel();
    return response.status;
  };
  return {
    status,
    requests,
    events,
    async [Symbol.asyncDispose]() {
      await store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("each answer counts under the subscription's name; any name not served under none", async () => {
  await using h = await recordedApp();
  const issue = await signedIssue(SECRET);
  assert.equal(await h.status("/webhooks/gh", issue), 202);
  assert.equal(await h.status("/webhooks/gh", issue), 200, "duplicate");
  assert.equal(await h.status("/webhooks/gh", await signedIssue("wrong-secret-0123456789")), 401);
  assert.equal(await h.status("/webhooks/pushes", await signedIssue(SECRET)), 200, "ignored");
  assert.equal(await h.status("/webhooks/gh", { method: "GET" }), 405);
  assert.equal(await h.status("/webhooks/made-up", { method: "GET" }), 405);
  assert.equal(await h.status("/webhooks/made-up", await signedIssue(SECRET)), 404);
  assert.equal(await h.status("/webhooks/Not%20A%20Name", await signedIssue(SECRET)), 404);
  assert.equal(await h.status("/webhooks/broken", await signedIssue(SECRET)), 500);
  assert.deepEqual(h.requests, [
    ["gh", 202],
    ["gh", 200],
    ["gh", 401],
    ["pushes", 200],
    ["gh", 405],
    [null, 405],
    [null, 404],
    [null, 404],
    [null, 500],
  ]);
  assert.deepEqual(h.events, [
    ["gh", "accepted"],
    ["gh", "duplicate"],
    ["pushes", "ignored"],
  ]);
});
