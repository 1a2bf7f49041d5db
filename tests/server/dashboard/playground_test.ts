/**
 * The template playground (docs/dashboard.md#template-playground), in-process on a real SQLite
 * store: a template rendered against a stored payload, its missing paths listed, the tokens
 * estimated; the page without JavaScript; a session needed; no secret shown; nothing written.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { DashboardWorld } from "./_helpers.ts";
import { dashboardWorld, issueEvent, logIn } from "./_helpers.ts";

const SECRET = "whsec-playground-9f8e7d6c5b4a";

/** A world with subscription `gh` (a prompt, a secret) and two stored events of it. */
async function world(): Promise<DashboardWorld & { older: string; newer: string }> {
  const w = await dashboardWorld({
    subscriptions: {
      gh: { events: ["issues"], prompt: "Triage {issue.title}", deliver: "log", secret: SECRET },
      ci: { events: ["push"], deliver: "log" },
    },
  });
  const older = (await w.store.accept(issueEvent({ deliveryId: "d-old" }))).eventId!;
  const payload = JSON.stringify({ action: "closed", issue: { number: 9, title: "Old bug" } });
  const newer = (await w.store.accept(
    issueEvent({ deliveryId: "d-new", eventLabel: "issues.closed", payload }),
  )).eventId!;
  return Object.assign(w, { older, newer });
}

/** A GET in `session`: status and body. */
async function get(w: DashboardWorld, session: { cookie: string } | null, path: string) {
  const headers: Record<string, string> = session ? { cookie: session.cookie } : {};
  const response = await w.app.request(path, { headers });
  return { status: response.status, body: await response.text() };
}

Deno.test("playground API renders a template against a stored payload and lists the missing paths", async () => {
  await using w = await world();
  const session = await logIn(w);
  const template = "#{issue.number} {issue.title} by {issue.user.login} ({__event__}) {nope}";
  const query = new URLSearchParams({ subscription: "gh", event: w.older, template });
  const answer = await get(w, session, `/api/playground?${query}`);
  assert.equal(answer.status, 200);
  const result = JSON.parse(answer.body);
  assert.equal(result.text, "#7 Crash on start by {issue.user.login} (issues.opened) {nope}");
  assert.deepEqual(result.missing, ["issue.user.login", "nope"]);
  assert.equal(result.tokens, Math.ceil(result.text.length / 4));
  assert.equal(result.eventId, w.older);

  // Without an event: the newest; without a template: the subscription's own prompt.
  const newest = JSON.parse((await get(w, session, "/api/playground?subscription=gh")).body);
  assert.equal(newest.text, "Triage Old bug");
  assert.deepEqual(newest.missing, []);
  // An empty template renders the default prompt, as the gateway does.
  const empty = JSON.parse(
    (await get(w, session, "/api/playground?subscription=gh&template=")).body,
  );
  assert.equal(empty.usedDefault, true);
  assert.match(empty.text, /^Webhook event 'issues.closed' on subscription 'gh':/);
});

Deno.test("playground API refuses another subscription's event, an unknown one, and a huge template", async () => {
  await using w = await world();
  const session = await logIn(w);
  const other = await get(w, session, `/api/playground?subscription=ci&event=${w.older}`);
  assert.equal(other.status, 404);
  assert.match(JSON.parse(other.body).error, /Subscription "ci" has no event/);
  const unknown = await get(w, session, "/api/playground?subscription=nobody");
  assert.equal(unknown.status, 404);
  assert.equal(JSON.parse(unknown.body).error, 'No subscription "nobody"');
  const none = await get(w, session, "/api/playground?subscription=ci");
  assert.equal(none.status, 404);
  assert.match(JSON.parse(none.body).error, /has no stored event/);
  const huge = await get(
    w,
    session,
    `/api/playground?subscription=gh&template=${"x".repeat(8001)}`,
  );
  assert.equal(huge.status, 400);
  assert.match(JSON.parse(huge.body).error, /longer than 8000 characters/);
});

Deno.test("playground page renders without JavaScript, flags missing paths, and shows no secret", async () => {
  await using w = await world();
  const session = await logIn(w);
  const first = await get(w, session, "/playground");
  assert.equal(first.status, 200);
  assert.match(first.body, /<textarea[^>]*name="template"[^>]*>Triage \{issue.title\}<\/textarea>/);
  assert.match(first.body, /<pre id="pg-text">Triage Old bug<\/pre>/, "the newest event");
  assert.match(first.body, /≈ 4 tokens/);
  assert.match(first.body, /<script src="\/assets\/playground.js" defer><\/script>/);
  assert.match(first.body, /href="\/playground">Playground</);
  assert.doesNotMatch(first.body, /<script>/, "no inline script");

  const query = new URLSearchParams({
    for: "gh",
    subscription: "gh",
    event: w.older,
    template: "{issue.title} <b>{issue.missing}</b>",
  });
  const typed = await get(w, session, `/playground?${query}`);
  assert.equal(typed.status, 200);
  assert.match(
    typed.body,
    /<pre id="pg-text">Crash on start &lt;b&gt;<mark class="missing">\{issue.missing\}<\/mark>&lt;\/b&gt;<\/pre>/,
  );
  assert.match(typed.body, /Missing in the payload: \{issue.missing\}/);
  assert.match(typed.body, new RegExp(`<option value="${w.older}" selected>`));

  // Another subscription chosen: its own prompt replaces the one typed for gh.
  query.set("subscription", "ci");
  const ci = await get(w, session, `/playground?${query}`);
  assert.match(ci.body, /<textarea[^>]*><\/textarea>/);
  assert.match(ci.body, /has no stored event yet/);

  for (const body of [first.body, typed.body, ci.body]) {
    assert.ok(!body.includes(SECRET), "a secret is never rendered");
    assert.ok(!body.includes(SECRET.slice(-4)), "not even its end: the playground shows none");
  }
});

Deno.test("playground needs a session and never writes the subscription file", async () => {
  await using w = await world();
  const page = await get(w, null, "/playground");
  assert.equal(page.status, 401);
  assert.doesNotMatch(page.body, /Triage/);
  const api = await get(w, null, "/api/playground?subscription=gh");
  assert.equal(api.status, 401);
  assert.match(JSON.parse(api.body).error, /Log in first/);

  const file = join(w.home, "webhook_subscriptions.json");
  const before = await Deno.readTextFile(file);
  assert.match(before, /Triage \{issue.title\}/);
  const session = await logIn(w);
  await get(w, session, "/playground?for=gh&subscription=gh&template=changed");
  await get(w, session, "/api/playground?subscription=gh&template=changed");
  assert.equal(await Deno.readTextFile(file), before);
});

Deno.test("playground script is served with the session-free assets, and styles with the sheet", async () => {
  await using w = await world();
  const script = await w.app.request("/assets/playground.js");
  assert.equal(script.status, 200);
  assert.match(script.headers.get("content-type")!, /text\/javascript/);
  assert.match(await script.text(), /\/api\/playground\?/);
  const css = await (await w.app.request("/assets/app.css")).text();
  assert.match(css, /mark\.missing/);
});
