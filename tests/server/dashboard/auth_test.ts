/**
 * The dashboard's doors (docs/dashboard.md): every page and API needs a session; the login link
 * works once and for 10 minutes; a rotated token ends every session; a POST another site could
 * make is refused; the security headers are on every response.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { requireSession } from "../../../server/dashboard/_auth.ts";
import { makeLoginCode, readToken, rotateToken } from "../../../server/dashboard/mod.ts";
import { dashboardWorld, formPost, issueEvent, logIn } from "./_helpers.ts";

/** Every page and API of the dashboard, for an event that exists. */
function protectedRequests(eventId: string): [string, string][] {
  return [
    ["GET", "/"],
    ["GET", "/overview"],
    ["GET", "/events"],
    ["GET", "/events?status=failed&type=issues"],
    ["GET", `/events/${eventId}`],
    ["GET", "/events/stream"],
    ["GET", `/events/stream?id=${eventId}`],
    ["GET", "/api/events"],
    ["GET", `/api/events/${eventId}`],
    ["GET", "/no-such-page"],
    ["GET", "/subscriptions"],
    ["GET", "/subscriptions?new"],
    ["GET", "/subscriptions/gh"],
    ["POST", "/subscriptions"],
    ["POST", "/subscriptions/gh/test"],
    ["POST", `/events/${eventId}/replay`],
    ["POST", "/logout"],
  ];
}

Deno.test("dashboard refuses every page and API without a session, with 401 and no event data", async () => {
  await using world = await dashboardWorld();
  const { eventId } = await world.store.accept(issueEvent());
  const strangers: Record<string, string>[] = [
    {},
    { cookie: "agent_dashboard=bogus" },
    { cookie: `agent_dashboard=${"a".repeat(8)}.${"b".repeat(22)}.${"c".repeat(43)}` },
    { authorization: `Bearer ${await readToken(world.tokenPath)}` },
  ];
  for (const headers of strangers) {
    for (const [method, path] of protectedRequests(eventId!)) {
      const response = await world.app.request(path, { method, headers });
      const body = await response.text();
      assert.equal(response.status, 401, `${method} ${path} with ${Object.keys(headers)}`);
      assert.doesNotMatch(body, /Crash on start|evt_/, `${method} ${path} leaks nothing`);
    }
  }
  const page = await world.app.request("/events");
  assert.match(await page.text(), /agent dashboard/, "the page says how to log in");
});

Deno.test("dashboard login link works once, then the session opens every page", async () => {
  await using world = await dashboardWorld();
  const token = (await readToken(world.tokenPath))!;
  const code = await makeLoginCode(token, world.clock.nowMs);
  const first = await world.app.request(`/login?code=${code}`);
  await first.body?.cancel();
  assert.equal(first.status, 303);
  assert.equal(first.headers.get("location"), "/events", "the code leaves the address bar");
  const cookie = first.headers.get("set-cookie")!;
  assert.match(cookie, /HttpOnly/);
  assert.match(cookie, /SameSite=Strict/);
  assert.match(cookie, /Path=\//);
  const again = await world.app.request(`/login?code=${code}`);
  assert.equal(again.status, 403);
  assert.match(await again.text(), /works once/);
  const events = await world.app.request("/events", {
    headers: { cookie: cookie.split(";")[0] },
  });
  assert.equal(events.status, 200);
  assert.match(await events.text(), /No events yet/);
});

Deno.test("dashboard refuses a login code that expired, was altered or was made with another token", async () => {
  await using world = await dashboardWorld();
  const token = (await readToken(world.tokenPath))!;
  const expired = await makeLoginCode(token, world.clock.nowMs - 10 * 60_000 - 1000);
  const other = await makeLoginCode("x".repeat(43), world.clock.nowMs);
  const good = await makeLoginCode(token, world.clock.nowMs);
  const altered = good.slice(0, -2) + (good.endsWith("AA") ? "BB" : "AA");
  for (const code of [expired, other, altered, "", "a.b.c", "%00"]) {
    const response = await world.app.request(`/login?code=${code}`);
    await response.body?.cancel();
    assert.equal(response.status, 403, code);
    assert.equal(response.headers.get("set-cookie"), null);
  }
  const works = await world.app.request(`/login?code=${good}`);
  await works.body?.cancel();
  assert.equal(works.status, 303, "the unaltered code still works once");
});

Deno.test("dashboard session ends after 7 days, and at once for everyone when the token is rotated", async () => {
  await using world = await dashboardWorld();
  const a = await logIn(world);
  world.clock.nowMs += 6 * 86_400_000;
  const b = await logIn(world);
  const status = async (cookie: string) => {
    const response = await world.app.request("/events", { headers: { cookie } });
    await response.body?.cancel();
    return response.status;
  };
  assert.equal(await status(a.cookie), 200);
  world.clock.nowMs += 86_400_000;
  assert.equal(await status(a.cookie), 401, "7 days after its login");
  assert.equal(await status(b.cookie), 200);
  await rotateToken(world.tokenPath);
  assert.equal(await status(b.cookie), 401, "the rotation ended it");
});

Deno.test("dashboard refuses a POST another site could make, and replays nothing", async () => {
  await using world = await dashboardWorld();
  const { eventId } = await world.store.accept(issueEvent());
  await world.store.claimDue(world.clock.nowMs, 1);
  await world.store.markFailed(eventId!, {
    error: "boom",
    step: "agent",
    nowMs: world.clock.nowMs,
  });
  const session = await logIn(world);
  const replay = `/events/${eventId}/replay`;
  const forged = [
    formPost(session, { _csrf: session.csrf }, { origin: "https://evil.example" }),
    formPost(session, { _csrf: session.csrf }, { origin: "null" }),
    formPost(session, { _csrf: session.csrf }, { "sec-fetch-site": "cross-site" }),
    formPost(session, { _csrf: session.csrf }, { "sec-fetch-site": "same-site" }),
    formPost(session, {}),
    formPost(session, { _csrf: "x".repeat(43) }),
    formPost(session, { _csrf: (await logIn(world)).csrf }),
  ];
  for (const request of forged) {
    const response = await world.app.request(replay, request);
    await response.body?.cancel();
    assert.equal(response.status, 403);
  }
  assert.equal((await world.store.getEvent(eventId!))?.status, "failed", "not replayed");
  assert.equal(world.wakes.count, 0);
  const real = await world.app.request(replay, formPost(session, { _csrf: session.csrf }));
  await real.body?.cancel();
  assert.equal(real.status, 303);
  assert.equal((await world.store.getEvent(eventId!))?.status, "queued");
});

Deno.test("dashboard log-out ends the browser's session", async () => {
  await using world = await dashboardWorld();
  const session = await logIn(world);
  const out = await world.app.request("/logout", formPost(session, { _csrf: session.csrf }));
  await out.body?.cancel();
  assert.equal(out.status, 303);
  assert.match(out.headers.get("set-cookie")!, /agent_dashboard=;.*Max-Age=0/);
});

Deno.test("dashboard sets the security headers on every response, refusals and assets included", async () => {
  await using world = await dashboardWorld();
  const { eventId } = await world.store.accept(issueEvent());
  const session = await logIn(world);
  const requests: [string, RequestInit][] = [
    ["/events", {}],
    ["/login", {}],
    ["/assets/app.js", {}],
    ["/assets/app.css", {}],
    ["/events", { headers: { cookie: session.cookie } }],
    [`/events/${eventId}`, { headers: { cookie: session.cookie } }],
    ["/api/events", { headers: { cookie: session.cookie } }],
    ["/no-such-page", { headers: { cookie: session.cookie } }],
    [`/events/${eventId}/replay`, formPost(session, {})],
  ];
  for (const [path, init] of requests) {
    const response = await world.app.request(path, init);
    await response.body?.cancel();
    const csp = response.headers.get("content-security-policy") ?? "";
    assert.match(csp, /script-src 'self'/, path);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/, path);
    assert.match(csp, /frame-ancestors 'none'/, path);
    assert.equal(response.headers.get("x-frame-options"), "DENY", path);
    assert.equal(response.headers.get("referrer-policy"), "same-origin", path);
    assert.equal(response.headers.get("x-content-type-options"), "nosniff", path);
  }
});

Deno.test("requireSession({ bearer }) takes the token as a bearer header, for a Prometheus scrape", async () => {
  await using world = await dashboardWorld();
  const token = (await readToken(world.tokenPath))!;
  const app = new Hono();
  const auth = { tokenPath: world.tokenPath, now: () => world.clock.nowMs, cookieName: "s" };
  const refuse = () => new Response("no", { status: 401 });
  app.use("/metrics", requireSession(auth, { bearer: true, refuse }));
  app.get("/metrics", (c) => c.text("agent_events_total 1"));
  const scrape = async (authorization?: string) => {
    const headers: Record<string, string> = authorization ? { authorization } : {};
    const response = await app.request("/metrics", { headers });
    await response.body?.cancel();
    return response.status;
  };
  assert.equal(await scrape(`Bearer ${token}`), 200);
  assert.equal(await scrape(`Bearer ${token.slice(0, -1)}`), 401);
  assert.equal(await scrape(`Basic ${token}`), 401);
  assert.equal(await scrape(), 401);
  await rotateToken(world.tokenPath);
  assert.equal(await scrape(`Bearer ${token}`), 401, "the old token no longer scrapes");
});
