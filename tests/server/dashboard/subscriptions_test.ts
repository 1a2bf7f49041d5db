/**
 * The dashboard's subscriptions pages, in-process on a real SQLite store and a real
 * subscription file (docs/dashboard.md#subscriptions): the list with each route's URL, events,
 * target, mode, rate limit, state, secret (its last 4 characters) and counts over 24 h; create,
 * edit, disable, enable and remove with the CLI's rules and messages, writing the file the CLI
 * writes; a refused form kept as typed; no secret in any page but the one a creation shows once.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../../lib/config/mod.ts";
import { readSubscriptions } from "../../../lib/subscriptions/file_store.ts";
import { createDashboardApp } from "../../../server/dashboard/mod.ts";
import type { DashboardWorld } from "./_helpers.ts";
import { dashboardWorld, formPost, issueEvent, logIn } from "./_helpers.ts";

const SECRET = `gh-secret-${crypto.randomUUID()}`;
const GLOBAL = `global-secret-${crypto.randomUUID()}`;
const TYPED_SECRET = `typed-secret-${crypto.randomUUID()}`;

/** A world with subscription `gh`, a static route `ci` from config.yaml, and a global secret. */
async function world(): Promise<DashboardWorld> {
  const w = await dashboardWorld({
    subscriptions: {
      gh: {
        events: ["issues"],
        prompt: "Triage {issue.title}",
        deliver: "telegram",
        deliver_extra: { chat_id: "4242" },
        secret: SECRET,
        rate_limit: 30,
        created_at: "2026-01-01T00:00:00.000Z",
        conversation: "kept as it is",
      },
    },
  });
  await Deno.writeTextFile(
    `${w.home}/config.yaml`,
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n" +
      `      secret: ${GLOBAL}\n      routes:\n        ci: {events: [pipeline], deliver: log}\n`,
  );
  const config = await loadConfig({ AGENT_HOME: w.home, TELEGRAM_BOT_TOKEN: "1:x" });
  w.app = createDashboardApp({ store: w.store, config, now: () => w.clock.nowMs, feed: w.feed });
  return w;
}

/** A GET in `session`: its status and body. */
async function get(w: DashboardWorld, session: { cookie: string }, path: string) {
  const response = await w.app.request(path, { headers: { cookie: session.cookie } });
  return { status: response.status, body: await response.text() };
}

/** A form POST in `session`, with its CSRF token: its status and body. */
async function post(
  w: DashboardWorld,
  session: { cookie: string; csrf: string },
  path: string,
  fields: Record<string, string> = {},
) {
  const response = await w.app.request(path, formPost(session, { _csrf: session.csrf, ...fields }));
  return { status: response.status, body: await response.text() };
}

/** The subscription file's records. */
async function records(w: DashboardWorld) {
  return await readSubscriptions(`${w.home}/webhook_subscriptions.json`);
}

Deno.test("subscriptions page lists each route: URL, events, target, mode, limit, state, secret's last 4, counts over 24 h", async () => {
  await using w = await world();
  const now = w.clock.nowMs;
  const recent = await w.store.accept(issueEvent({ receivedAtMs: now - 3_600_000 }));
  await w.store.accept(issueEvent({ receivedAtMs: now - 60_000 }));
  await w.store.accept(issueEvent({ receivedAtMs: now - 25 * 3_600_000 })); // a day ago
  const [, first] = await w.store.claimDue(now, 2);
  await w.store.markDelivered(first.id, now - 1000);
  assert.ok(recent.eventId);
  const session = await logIn(w);
  const { status, body } = await get(w, session, "/subscriptions");
  assert.equal(status, 200);
  const gh = body.match(/<tr data-name="gh">(.*?)<\/tr>/s)![1];
  assert.match(gh, /http:\/\/localhost:\d+\/webhooks\/gh/);
  assert.match(gh, /<td class="mono">issues<\/td>/);
  assert.match(gh, /<td>telegram chat 4242<\/td><td>agent run<\/td><td>30\/min<\/td>/);
  assert.match(gh, /<td class="state">enabled<\/td>/);
  assert.match(gh, new RegExp(`<td class="mono secret">…${SECRET.slice(-4)}</td>`));
  assert.match(gh, /"accepted">2<.*"status-delivered delivered">1<.*"status-failed failed">0</s);
  const ci = body.match(/<tr data-name="ci">(.*?)<\/tr>/s)![1];
  assert.match(ci, /\(config\.yaml\)/);
  assert.match(ci, new RegExp(`…${GLOBAL.slice(-4)} \\(the global secret\\)`));
  assert.ok(!body.includes(SECRET) && !body.includes(GLOBAL), "no secret on the page");
});

Deno.test("New subscription creates the record subscribe would, and shows its secret once", async () => {
  await using w = await world();
  const session = await logIn(w);
  const created = await post(w, session, "/subscriptions", {
    name: "alerts",
    events: "push, issues.opened",
    filter: 'ref == "refs/heads/main"\n\n',
    prompt: "Push to {repository.name}",
    deliver: "log",
    "rate-limit": "12",
  });
  assert.equal(created.status, 200);
  const stored = (await records(w)).alerts;
  assert.deepEqual(stored.events, ["push", "issues.opened"]);
  assert.deepEqual(stored.filters, ['ref == "refs/heads/main"']);
  assert.equal(stored.prompt, "Push to {repository.name}");
  assert.equal(stored.deliver, "log");
  assert.equal(stored.rate_limit, 12);
  assert.equal(stored.created_at, new Date(w.clock.nowMs).toISOString());
  assert.match(stored.secret!, /^[A-Za-z0-9_-]{43}$/, "32 random bytes, as subscribe makes");
  assert.match(created.body, /Created subscription &quot;alerts&quot;/);
  assert.ok(created.body.includes(`Secret:  ${stored.secret}`), "the secret, this once");
  const again = await get(w, session, "/subscriptions/alerts");
  assert.equal(again.status, 200);
  assert.ok(!again.body.includes(stored.secret!), "never again");
  assert.ok(again.body.includes(`…${stored.secret!.slice(-4)}`));
});

Deno.test("New subscription with a typed secret does not show it back", async () => {
  await using w = await world();
  const session = await logIn(w);
  const created = await post(w, session, "/subscriptions", {
    name: "alerts",
    deliver: "log",
    secret: TYPED_SECRET,
  });
  assert.equal(created.status, 200);
  assert.equal((await records(w)).alerts.secret, TYPED_SECRET);
  assert.match(created.body, /Created subscription &quot;alerts&quot;/);
  assert.ok(!created.body.includes(TYPED_SECRET), "the typed secret is not shown back");
  assert.ok(created.body.includes(`ending in …${TYPED_SECRET.slice(-4)}`));
});

Deno.test("subscription forms refuse what subscribe refuses, with its message, and keep what was typed", async () => {
  await using w = await world();
  const session = await logIn(w);
  const before = await Deno.readTextFile(`${w.home}/webhook_subscriptions.json`);
  const cases: [Record<string, string>, number, RegExp][] = [
    [{ name: "Bad Name" }, 400, /Cannot subscribe &quot;Bad Name&quot;: name must match/],
    [{ name: "ci" }, 400, /Cannot subscribe &quot;ci&quot;: it is defined in config.yaml/],
    [{ name: "gh" }, 409, /A subscription named &quot;gh&quot; exists already/],
    [{ name: "x", "rate-limit": "ten" }, 400, /--rate-limit must be a whole number/],
    [{ name: "x", filter: "a ==" }, 400, /--filter has a mistake at/],
    [{ name: "x", deliver: "pager" }, 400, /Unknown delivery target &quot;pager&quot;/],
    [{ name: "x", secret: "short" }, 400, /--secret must be at least 8 characters/],
    [{ name: "x", temperature: "3" }, 400, /--temperature must be a number from 0 to 2/],
  ];
  for (const [fields, status, message] of cases) {
    const answer = await post(w, session, "/subscriptions", {
      description: "typed <b>before</b>",
      secret: TYPED_SECRET,
      ...fields,
    });
    assert.ok(!answer.body.includes(TYPED_SECRET), "a typed secret is not shown back");
    assert.equal(answer.status, status, JSON.stringify(fields));
    assert.match(answer.body, message, JSON.stringify(fields));
    assert.match(answer.body, /value="typed &lt;b&gt;before&lt;\/b&gt;"/, "kept as typed");
  }
  const edit = await post(w, session, "/subscriptions/gh", {
    deliver: "telegram",
    "deliver-chat-id": "42",
    "max-tokens": "0",
  });
  assert.equal(edit.status, 400);
  assert.match(edit.body, /--max-tokens must be a whole number of tokens \(≥ 1\)/);
  assert.match(edit.body, /name="max-tokens" inputmode="numeric" value="0"/, "kept as typed");
  const noChat = await post(w, session, "/subscriptions/gh", { deliver: "slack" });
  assert.match(noChat.body, /--deliver slack needs a destination/);
  assert.equal(await Deno.readTextFile(`${w.home}/webhook_subscriptions.json`), before);
});

Deno.test("editing a subscription replaces the form's fields and keeps its secret and the rest", async () => {
  await using w = await world();
  const session = await logIn(w);
  const page = await get(w, session, "/subscriptions/gh");
  assert.match(page.body, /name="events" id="f-events" value="issues"/, "filled from the record");
  assert.match(page.body, /name="secret" type="password"[^>]* value=""/, "the secret never");
  w.clock.nowMs += 60_000;
  const saved = await post(w, session, "/subscriptions/gh", {
    events: "",
    prompt: "New {issue.title}",
    deliver: "telegram",
    "deliver-chat-id": "99",
    "deliver-thread": "7",
  });
  assert.equal(saved.status, 200, saved.body);
  assert.match(saved.body, /Updated subscription &quot;gh&quot;/);
  assert.ok(!saved.body.includes(SECRET));
  const gh = (await records(w)).gh;
  assert.deepEqual(gh.events, [], "blank: every event");
  assert.equal(gh.prompt, "New {issue.title}");
  assert.deepEqual(gh.deliver_extra, { chat_id: "99", thread: "7" });
  assert.equal(gh.rate_limit, undefined, "blank: the default");
  assert.equal(gh.secret, SECRET);
  assert.equal(gh.created_at, "2026-01-01T00:00:00.000Z");
  assert.equal(gh.updated_at, new Date(w.clock.nowMs).toISOString());
  assert.equal((gh as Record<string, unknown>).conversation, "kept as it is");
  const secret = "a-new-secret-typed";
  await post(w, session, "/subscriptions/gh", { deliver: "log", secret });
  assert.equal((await records(w)).gh.secret, secret);
});

Deno.test("Disable, Enable and Remove do what the CLI's disable, enable and remove do", async () => {
  await using w = await world();
  const session = await logIn(w);
  const disabled = await post(w, session, "/subscriptions/gh/disable");
  assert.equal(disabled.status, 200);
  assert.match(disabled.body, /Disabled &quot;gh&quot;: the gateway answers its requests 404/);
  assert.equal((await records(w)).gh.disabled, true);
  const list = await get(w, session, "/subscriptions");
  assert.match(list.body, /<tr data-name="gh">.*?<td class="state error-text">disabled</s);
  await post(w, session, "/subscriptions/gh/enable");
  assert.equal((await records(w)).gh.disabled, undefined);
  const removed = await post(w, session, "/subscriptions/gh/remove");
  assert.equal(removed.status, 200);
  assert.match(removed.body, /Removed subscription &quot;gh&quot;/);
  assert.deepEqual(Object.keys(await records(w)), []);
  const again = await post(w, session, "/subscriptions/gh/remove");
  assert.equal(again.status, 404);
  assert.match(again.body, /No subscription named &quot;gh&quot;/);
  const fixed = await post(w, session, "/subscriptions/ci/remove");
  assert.match(fixed.body, /Cannot remove &quot;ci&quot;: it is defined in config.yaml/);
});

Deno.test("subscription forms refuse a POST without the CSRF token or from another site", async () => {
  await using w = await world();
  const session = await logIn(w);
  const before = await Deno.readTextFile(`${w.home}/webhook_subscriptions.json`);
  const attempts: RequestInit[] = [
    formPost(session, { name: "evil", deliver: "log" }),
    formPost(session, { _csrf: session.csrf, name: "evil" }, { "sec-fetch-site": "cross-site" }),
    formPost(session, { _csrf: session.csrf, name: "evil" }, { origin: "http://evil.example" }),
  ];
  for (const path of ["/subscriptions", "/subscriptions/gh/remove", "/subscriptions/gh/test"]) {
    for (const init of attempts) {
      const response = await w.app.request(path, init);
      await response.body?.cancel();
      assert.equal(response.status, 403, path);
    }
  }
  assert.equal(await Deno.readTextFile(`${w.home}/webhook_subscriptions.json`), before);
  const own = await post(w, session, "/subscriptions", { name: "mine", deliver: "log" });
  assert.equal(own.status, 200, "the page's own form, with its token, is taken");
  assert.deepEqual(Object.keys(await records(w)), ["gh", "mine"]);
});

Deno.test("Test refuses a payload that is no JSON object, and a name no route has", async () => {
  await using w = await world();
  const session = await logIn(w);
  const bad = await post(w, session, "/subscriptions/gh/test", { payload: "[1]" });
  assert.equal(bad.status, 400);
  assert.match(bad.body, /--payload must be a JSON object/);
  const unknown = await post(w, session, "/subscriptions/nope/test");
  assert.equal(unknown.status, 404);
  assert.match(unknown.body, /No subscription named &quot;nope&quot;/);
});

Deno.test("a subscription named new has its page, apart from the New form", async () => {
  await using w = await world();
  const session = await logIn(w);
  const form = await get(w, session, "/subscriptions?new");
  assert.match(form.body, /<h1>New subscription<\/h1>/);
  await post(w, session, "/subscriptions", { name: "new", deliver: "log" });
  const page = await get(w, session, "/subscriptions/new");
  assert.equal(page.status, 200);
  assert.match(page.body, /<h1>new <span class="muted">enabled<\/span><\/h1>/);
});
