import assert from "node:assert/strict";
import { join } from "node:path";
import { TargetError } from "../../lib/errors.ts";
import { createMemoryRateLimiter } from "../../lib/subscriptions/rate_limit.ts";
import type { StateStore } from "../../lib/state/mod.ts";
import { openStateStore } from "../../lib/state/sqlite/mod.ts";
import type { Route } from "../../lib/subscriptions/mod.ts";
import type { DeliveryJob } from "../../lib/targets/mod.ts";
import { createApp, type IngestDeps, webhookName } from "../../server/app.ts";
import { signedGitHubBody } from "../_helpers.ts";
import { directWorker } from "../fakes/direct_worker.ts";
import { createSignatureVerifier } from "../../lib/signatures/mod.ts";

const SECRET = "test-secret-0123456789";
const NOW = Date.parse("2026-11-21T12:00:00Z");

interface Harness extends AsyncDisposable {
  request(path: string, init?: RequestInit): Promise<Response>;
  store: StateStore;
  delivered: DeliveryJob[];
  accepted: number;
  routes: Map<string, Route>;
  failDelivery: boolean;
}

async function harness(overrides: Partial<IngestDeps> = {}): Promise<Harness> {
  const dir = await Deno.makeTempDir({ prefix: "agent-app-" });
  const store = openStateStore(join(dir, "gateway.db"));
  const routes = new Map<string, Route>([
    ["gh", { name: "gh", origin: "dynamic", secret: SECRET, prompt: "Issue {issue.title}" }],
    ["filtered", { name: "filtered", origin: "dynamic", secret: SECRET, events: ["push"] }],
    ["nosecret", { name: "nosecret", origin: "dynamic" }],
    ["static-global", { name: "static-global", origin: "static" }],
    ["direct", {
      name: "direct",
      origin: "dynamic",
      secret: SECRET,
      deliver: "telegram",
      deliver_only: true,
      prompt: "Hello {issue.title}",
    }],
    ["limited", { name: "limited", origin: "dynamic", secret: SECRET, rate_limit: 2 }],
  ]);
  const h: Harness = {
    store,
    delivered: [],
    accepted: 0,
    routes,
    failDelivery: false,
    request: (path, init) => Promise.resolve(app.request(path, init)),
    async [Symbol.asyncDispose]() {
      await store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
  const direct = directWorker(store, (job) => {
    if (h.failDelivery) return Promise.reject(new TargetError("telegram said no: token xyz"));
    h.delivered.push(job);
    return Promise.resolve({ target: job.target, parts: 1, destination: "chat" });
  }, { now: () => NOW });
  const app = createApp({
    findRoute: (name) => routes.get(name),
    maxBodyBytes: 4096,
    rateLimitPerMinute: 60,
    globalSecret: "global-secret-value",
    verifier: createSignatureVerifier(),
    rateLimiter: createMemoryRateLimiter(),
    store,
    onAccepted: () => void h.accepted++,
    deliverNow: (event, payload) => direct.deliverNow(event, payload),
    now: () => NOW,
    newId: () => crypto.randomUUID(),
    ...overrides,
  });
  return h;
}

function github(
  body: string,
  options: { event?: string; delivery?: string; secret?: string } = {},
): Promise<RequestInit> {
  return signedGitHubBody(options.secret ?? SECRET, body, options);
}

async function json(response: Response) {
  return { status: response.status, body: await response.json() };
}

const ISSUE = JSON.stringify({ action: "opened", issue: { title: "Crash" } });

Deno.test("GET /health answers ok without authentication", async () => {
  await using h = await harness();
  assert.deepEqual(await json(await h.request("/health")), {
    status: 200,
    body: { status: "ok", platform: "webhook" },
  });
});

Deno.test("POST persists a signed GitHub event and answers 202 with its event id", async () => {
  await using h = await harness();
  const response = await h.request("/webhooks/gh", await github(ISSUE, { delivery: "d-1" }));
  const { status, body } = await json(response);
  assert.equal(status, 202);
  // As Hermes Agent answers: `event` is X-GitHub-Event's value, the action has its own field.
  assert.deepEqual(body, {
    status: "accepted",
    route: "gh",
    subscription: "gh",
    event: "issues",
    action: "opened",
    event_type: "issues.opened",
    delivery_id: "d-1",
    event_id: body.event_id,
  });
  assert.equal(typeof body.event_id, "string");
  const stored = await h.store.getEvent(body.event_id);
  assert.equal(stored?.prompt, "Issue Crash");
  assert.equal(stored?.status, "queued");
  assert.equal(h.accepted, 1);
});

Deno.test("the signature is checked on the bytes as sent: a pretty-printed body with \\u escapes is accepted", async () => {
  await using h = await harness();
  // As PHP or Python senders write it: what JSON.stringify of the parsed value would not give.
  const body = '{\n  "action": "opened",\n  "issue": { "title": "Caf\\u00e9 \\/ menu" }\n}\n';
  const { status, body: answer } = await json(await h.request("/webhooks/gh", await github(body)));
  assert.equal(status, 202, JSON.stringify(answer));
  assert.equal((await h.store.getEvent(answer.event_id))?.prompt, "Issue Café / menu");
});

Deno.test("a repeated delivery id is answered duplicate and stored once", async () => {
  await using h = await harness();
  await (await h.request("/webhooks/gh", await github(ISSUE, { delivery: "same" }))).body?.cancel();
  const second = await json(
    await h.request("/webhooks/gh", await github(ISSUE, { delivery: "same" })),
  );
  assert.deepEqual(second, { status: 200, body: { status: "duplicate", delivery_id: "same" } });
  assert.equal((await h.store.listEvents({})).length, 1);
});

Deno.test("webhookName() takes the one-segment name of /webhooks/<name> and nothing else", () => {
  const cases: [string, string | undefined][] = [
    ["http://127.0.0.1:8644/webhooks/gh", "gh"],
    ["http://127.0.0.1:8644/webhooks/gh?x=1", "gh"],
    ["https://hooks.example.com/webhooks/a-b_c", "a-b_c"],
    ["http://[::1]:8644/webhooks/gh", "gh"],
    ["http://127.0.0.1:8644/webhooks/", undefined],
    ["http://127.0.0.1:8644/webhooks/?x", undefined],
    ["http://127.0.0.1:8644/webhooks/gh/", undefined],
    ["http://127.0.0.1:8644/webhooks/gh/more", undefined],
    ["http://127.0.0.1:8644/webhooks/g%68", undefined],
    ["http://127.0.0.1:8644/webhooksgh", undefined],
    ["http://127.0.0.1:8644/health", undefined],
    ["http://127.0.0.1:8644/x/webhooks/gh", undefined],
  ];
  for (const [url, name] of cases) assert.equal(webhookName(url), name, url);
});

Deno.test("webhook paths the fast path leaves to Hono are answered as Hono routes them", async () => {
  await using h = await harness();
  const encoded = await json(await h.request("/webhooks/g%68", await github(ISSUE)));
  assert.equal(encoded.status, 202, "Hono decodes the name to gh");
  assert.equal(encoded.body.subscription, "gh");
  for (const path of ["/webhooks/gh/", "/webhooks/", "/webhooks/gh/x"]) {
    const response = await h.request(path, await github(ISSUE));
    assert.equal(response.status, 404, path);
    assert.match((await response.json()).error, /^not found: POST /);
  }
  assert.equal((await h.store.listEvents({})).length, 1);
  for (const path of ["/webhooks/gh", "/webhooks/g%68"]) {
    const head = await h.request(path, { method: "HEAD" });
    assert.equal(head.status, 405, path);
    assert.equal(await head.text(), "", `HEAD ${path} has no body`);
  }
});

Deno.test("an unexpected error in the pipeline answers 500 without details", async () => {
  await using h = await harness({
    findRoute: () => {
      throw new Error("secret detail");
    },
  });
  const response = await h.request("/webhooks/gh", await github(ISSUE));
  assert.deepEqual(await json(response), { status: 500, body: { error: "internal error" } });
});

Deno.test("each step of the pipeline answers with its own status, in order", async () => {
  await using h = await harness();
  const cases: [string, RequestInit | Promise<RequestInit>, number, RegExp | object][] = [
    ["/webhooks/gh", { method: "GET" }, 405, /not allowed/],
    ["/webhooks/missing", github(ISSUE), 404, { error: "unknown subscription: missing" }],
    ["/webhooks/GH", github(ISSUE), 404, /unknown subscription/],
    ["/webhooks/gh", github("x".repeat(5000)), 413, /larger than 4096/],
    ["/webhooks/nosecret", github(ISSUE), 403, /no secret/],
    ["/webhooks/gh", { method: "POST", body: ISSUE }, 401, { error: "missing signature" }],
    ["/webhooks/gh", github(ISSUE, { secret: "wrong-secret" }), 401, {
      error: "invalid signature",
    }],
    ["/webhooks/gh", github("{not json"), 400, /not valid JSON/],
    ["/webhooks/gh", github(""), 400, /empty body/],
    ["/webhooks/gh", github(ISSUE, { event: "ping" }), 200, { status: "pong" }],
    ["/webhooks/filtered", github(ISSUE), 200, { status: "ignored", event: "issues.opened" }],
  ];
  for (const [path, init, status, expected] of cases) {
    const response = await h.request(path, await init);
    const body = await response.json();
    assert.equal(response.status, status, `${path} ${JSON.stringify(body)}`);
    if (expected instanceof RegExp) assert.match(JSON.stringify(body), expected);
    else assert.deepEqual(body, expected);
    if (status === 405) assert.equal(response.headers.get("allow"), "POST");
  }
  assert.equal((await h.store.listEvents({})).length, 0, "nothing was dispatched");
});

Deno.test("a route or secret newer than the cached subscriptions is looked up before refusing", async () => {
  const NEW_SECRET = "the-new-secret-0123456789";
  const stale = new Map<string, Route>([
    ["gh", { name: "gh", origin: "dynamic", secret: SECRET }],
    ["same", { name: "same", origin: "dynamic", secret: SECRET }],
    ["gaining", { name: "gaining", origin: "dynamic" }],
    ["removed", { name: "removed", origin: "dynamic", secret: SECRET }],
  ]);
  const fresh = new Map<string, Route>([
    ["gh", { name: "gh", origin: "dynamic", secret: NEW_SECRET }],
    ["same", { name: "same", origin: "dynamic", secret: SECRET }],
    ["gaining", { name: "gaining", origin: "dynamic", secret: NEW_SECRET }],
    ["late", { name: "late", origin: "dynamic", secret: SECRET }],
  ]);
  const counts = { fresh: 0, verify: 0 };
  const verifier = createSignatureVerifier();
  await using h = await harness({
    findRoute: (name, options) => {
      if (!options?.fresh) return stale.get(name);
      counts.fresh++;
      return fresh.get(name);
    },
    verifier: { verify: (input) => (counts.verify++, verifier.verify(input)) },
  });
  const post = async (name: string, init: RequestInit) => {
    const before = { ...counts };
    const response = await h.request(`/webhooks/${name}`, init);
    await response.body?.cancel();
    return {
      status: response.status,
      fresh: counts.fresh - before.fresh,
      verify: counts.verify - before.verify,
    };
  };
  const signed = (secret: string) => github(ISSUE, { secret });
  // Just subscribed: unknown to the copy, found in the file.
  assert.deepEqual(await post("late", await signed(SECRET)), { status: 202, fresh: 1, verify: 1 });
  // Secret just rotated: the old one fails, the new one passes.
  assert.deepEqual(await post("gh", await signed(NEW_SECRET)), {
    status: 202,
    fresh: 1,
    verify: 2,
  });
  // A secret just set where there was none.
  assert.deepEqual(await post("gaining", await signed(NEW_SECRET)), {
    status: 202,
    fresh: 1,
    verify: 1,
  });
  // Nothing changed: a wrong signature is verified once, not twice.
  assert.deepEqual(await post("same", await signed("wrong")), { status: 401, fresh: 1, verify: 1 });
  // Removed since the copy was made.
  assert.deepEqual(await post("removed", await signed("wrong")), {
    status: 404,
    fresh: 1,
    verify: 1,
  });
  assert.deepEqual(await post("nope", await signed(SECRET)), { status: 404, fresh: 1, verify: 0 });
  // No signature at all: no secret could make it pass, so the file is not looked at.
  const unsigned = { method: "POST", body: ISSUE, headers: { "x-github-event": "issues" } };
  assert.deepEqual(await post("gh", unsigned), { status: 401, fresh: 0, verify: 1 });
});

Deno.test("a static route without a secret of its own uses the global secret", async () => {
  await using h = await harness();
  const ok = await h.request(
    "/webhooks/static-global",
    await github(ISSUE, { secret: "global-secret-value" }),
  );
  assert.equal(ok.status, 202);
  await ok.body?.cancel();
});

Deno.test("a chunked body over the limit is refused with 413 while it is read", async () => {
  await using h = await harness();
  const chunks = [new Uint8Array(3000), new Uint8Array(3000)];
  const body = new ReadableStream({
    pull(controller) {
      const chunk = chunks.shift();
      if (chunk) controller.enqueue(chunk);
      else controller.close();
    },
  });
  const response = await h.request(
    "/webhooks/gh",
    { method: "POST", body, duplex: "half" } as RequestInit,
  );
  assert.equal(response.status, 413);
  await response.body?.cancel();
});

Deno.test("over the subscription's rate limit the answer is 429 with Retry-After", async () => {
  await using h = await harness();
  const statuses = [];
  for (let i = 0; i < 3; i++) {
    const response = await h.request("/webhooks/limited", await github(ISSUE));
    statuses.push(response.status);
    if (response.status === 429) assert.equal(response.headers.get("retry-after"), "30");
    await response.body?.cancel();
  }
  assert.deepEqual(statuses, [202, 202, 429]);
});

Deno.test("requests that fail authentication do not use up the subscription's rate limit", async () => {
  await using h = await harness();
  // Anyone who knows the URL could otherwise get the real sender 429s.
  for (let i = 0; i < 5; i++) {
    const forged = await h.request(
      "/webhooks/limited",
      await github(ISSUE, { secret: "wrong-secret-123" }),
    );
    assert.equal(forged.status, 401);
    await forged.body?.cancel();
  }
  const real = await h.request("/webhooks/limited", await github(ISSUE));
  assert.equal(real.status, 202);
  await real.body?.cancel();
});

Deno.test("direct delivery answers 200 and records the delivery id only after success", async () => {
  await using h = await harness();
  h.failDelivery = true;
  const failed = await json(
    await h.request("/webhooks/direct", await github(ISSUE, { delivery: "x1" })),
  );
  assert.equal(failed.status, 502);
  assert.equal(failed.body.error, "delivery failed");
  assert.doesNotMatch(JSON.stringify(failed.body), /xyz/, "target error details are not echoed");

  assert.deepEqual(failed.body, {
    status: "error",
    error: "delivery failed",
    subscription: "direct",
    event: "issues",
    action: "opened",
    event_type: "issues.opened",
    delivery_id: "x1",
  });

  h.failDelivery = false;
  const retried = await json(
    await h.request("/webhooks/direct", await github(ISSUE, { delivery: "x1" })),
  );
  assert.equal(retried.status, 200);
  assert.deepEqual(retried.body, {
    status: "delivered",
    route: "direct",
    subscription: "direct",
    event: "issues",
    action: "opened",
    event_type: "issues.opened",
    target: "telegram",
    delivery_id: "x1",
    event_id: retried.body.event_id,
  });
  assert.equal(typeof retried.body.event_id, "string");
  assert.equal(h.delivered[0].text, "Hello Crash");
  assert.equal(h.delivered[0].target, "telegram");

  const again = await json(
    await h.request("/webhooks/direct", await github(ISSUE, { delivery: "x1" })),
  );
  assert.equal(again.body.status, "duplicate");
  assert.equal(h.delivered.length, 1);
});

Deno.test("a GitHub form-mode body is parsed from its payload field", async () => {
  await using h = await harness();
  const body = new URLSearchParams({ payload: ISSUE }).toString();
  const init = await github(body);
  (init.headers as Record<string, string>)["content-type"] = "application/x-www-form-urlencoded";
  const { status, body: answer } = await json(await h.request("/webhooks/gh", init));
  assert.equal(status, 202);
  assert.equal((await h.store.getEvent(answer.event_id))?.prompt, "Issue Crash");
});

Deno.test("a JSON body labelled a form, as curl -d sends it, is read as JSON", async () => {
  await using h = await harness();
  h.routes.set("iot", {
    name: "iot",
    origin: "dynamic",
    secret: SECRET,
    auth: "bearer",
    prompt: "Alert {alert} on {host}",
  });
  const FORM = { "content-type": "application/x-www-form-urlencoded" };
  const curl = (body: string) =>
    h.request("/webhooks/iot", {
      method: "POST",
      headers: { ...FORM, authorization: `Bearer ${SECRET}` },
      body,
    });
  const alert = '{"alert":"disk full","host":"db1"}';
  const accepted = await json(await curl(alert));
  assert.equal(accepted.status, 202);
  const stored = (await h.store.getEvent(accepted.body.event_id))!;
  assert.deepEqual([stored.payload, stored.prompt], [alert, "Alert disk full on db1"]);
  // Signed as GitHub signs, whose form mode would want a payload field.
  const init = await github(ISSUE);
  Object.assign(init.headers as Record<string, string>, FORM);
  const labelled = await json(await h.request("/webhooks/gh", init));
  assert.equal((await h.store.getEvent(labelled.body.event_id))?.prompt, "Issue Crash");
  // Broken JSON is a 400, not a form with one odd field.
  const broken = await json(await curl('{"alert": "disk full"'));
  assert.equal(broken.status, 400);
  assert.match(broken.body.error, /not valid JSON/);
  // A real form still is one.
  const form = await json(await curl("alert=disk+full&host=db1"));
  assert.equal((await h.store.getEvent(form.body.event_id))?.prompt, "Alert disk full on db1");
});

Deno.test("integers a double cannot hold reach the prompt as the sender wrote them", async () => {
  await using h = await harness();
  h.routes.set("orders", {
    name: "orders",
    origin: "dynamic",
    secret: SECRET,
    prompt: "Order {order.id} of {order.amount}, limit {order.limit}, card {card}: {order}",
  });
  h.routes.set("raw", { name: "raw", origin: "dynamic", secret: SECRET });
  const body = '{"order":{"id":12345678901234567891,"amount":0.1,"limit":1e400},' +
    '"card":"4242424242424242"}';
  const orders = await json(await h.request("/webhooks/orders", await github(body)));
  assert.equal(
    (await h.store.getEvent(orders.body.event_id))?.prompt,
    "Order 12345678901234567891 of 0.1, limit null, card 4242424242424242: " +
      '{\n  "id": 12345678901234567891,\n  "amount": 0.1,\n  "limit": null\n}',
  );
  const raw = await json(await h.request("/webhooks/raw", await github(body)));
  assert.match((await h.store.getEvent(raw.body.event_id))!.prompt, /"id": 12345678901234567891,/);
  // A payload without such numbers renders as before, 16 digits in a string or not.
  const plain = await json(
    await h.request(
      "/webhooks/orders",
      await github('{"order":{"id":7},"card":"4242424242424242"}'),
    ),
  );
  assert.match(
    (await h.store.getEvent(plain.body.event_id))!.prompt,
    /^Order 7 of \{order\.amount\}/,
  );
});

Deno.test("a store that cannot persist makes the answer 503 with Retry-After, never 202", async () => {
  await using h = await harness();
  await h.store.close();
  const response = await h.request("/webhooks/gh", await github(ISSUE));
  assert.equal(response.status, 503);
  assert.ok(response.headers.get("retry-after"));
  await response.body?.cancel();
});

Deno.test("direct mode answers 503 with Retry-After, not 500, when the store cannot be read, and sends nothing", async () => {
  await using h = await harness();
  await h.store.close();
  const response = await h.request("/webhooks/direct", await github(ISSUE, { delivery: "d1" }));
  assert.equal(response.status, 503);
  assert.ok(response.headers.get("retry-after"));
  assert.deepEqual(await response.json(), { error: "event store unavailable, retry later" });
  assert.equal(h.delivered.length, 0);
});

Deno.test("a static route with an empty secret uses the global one, and without one answers 403", async () => {
  await using h = await harness();
  h.routes.set("empty", { name: "empty", origin: "static", secret: "" });
  const signed = await h.request(
    "/webhooks/empty",
    await github(ISSUE, { secret: "global-secret-value" }),
  );
  assert.equal(signed.status, 202, await signed.text());
  h.routes.set("empty-dynamic", { name: "empty-dynamic", origin: "dynamic", secret: "" });
  const refused = await json(await h.request("/webhooks/empty-dynamic", await github(ISSUE)));
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error, "no secret configured for this subscription");
});

Deno.test("the 202 names the event as Hermes Agent does: the sender's type, its action, and what the filter matched", async () => {
  await using h = await harness();
  const route = (name: string, events: string[]): Route => ({
    name,
    origin: "dynamic",
    secret: SECRET,
    events,
  });
  h.routes.set("by-type", route("by-type", ["push", "pull_request"]));
  h.routes.set("by-action", route("by-action", ["pull_request", "pull_request.opened"]));
  const pull = JSON.stringify({ action: "opened", pull_request: { title: "Fix" } });
  const names = async (path: string, body: string, event: string) => {
    const answer = await json(await h.request(path, await github(body, { event })));
    assert.equal(answer.status, 202, JSON.stringify(answer.body));
    const { event: type, action, event_type } = answer.body;
    return { event: type, action, event_type };
  };
  assert.deepEqual(await names("/webhooks/by-type", pull, "pull_request"), {
    event: "pull_request",
    action: "opened",
    event_type: "pull_request",
  });
  assert.deepEqual(await names("/webhooks/by-action", pull, "pull_request"), {
    event: "pull_request",
    action: "opened",
    event_type: "pull_request.opened",
  });
  // A payload without an action: no action field, the type alone.
  const push = await json(
    await h.request("/webhooks/by-type", await github("{}", { event: "push" })),
  );
  assert.equal(push.status, 202);
  assert.equal("action" in push.body, false);
  assert.deepEqual([push.body.event, push.body.event_type], ["push", "push"]);
});
