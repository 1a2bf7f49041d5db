/**
 * The dashboard's pages and APIs, in-process on a real SQLite store (docs/dashboard.md): the
 * events list with its filters and cursor pages, an event's story, the Replay button, and the
 * JSON of the same; what senders wrote shown as text, never as markup.
 */
import assert from "node:assert/strict";
import type { DashboardWorld } from "./_helpers.ts";
import { dashboardWorld, formPost, issueEvent, logIn } from "./_helpers.ts";

/** A GET of the dashboard in `session`, its status and body. */
async function get(world: DashboardWorld, session: { cookie: string }, path: string) {
  const response = await world.app.request(path, { headers: { cookie: session.cookie } });
  return { status: response.status, body: await response.text() };
}

/** The event ids of the events page's rows, in order. */
const rowIds = (body: string) => [...body.matchAll(/<tr data-id="([^"]+)"/g)].map((m) => m[1]);

Deno.test("events page lists newest first, a page of 50 at a time, by cursor", async () => {
  await using world = await dashboardWorld();
  const ids: string[] = [];
  for (let i = 0; i < 53; i++) {
    ids.push(
      (await world.store.accept(issueEvent({ receivedAtMs: 1_800_000_000_000 + i })))
        .eventId!,
    );
  }
  const session = await logIn(world);
  const first = await get(world, session, "/events");
  assert.equal(first.status, 200);
  assert.deepEqual(rowIds(first.body), ids.slice(3).reverse());
  const older = first.body.match(/href="(\/events\?before=[^"]+)">Older/)![1];
  assert.equal(older, `/events?before=${ids[3]}`);
  assert.match(first.body, /data-stream="\/events\/stream\?since=/, "the first page is live");
  const second = await get(world, session, older);
  assert.deepEqual(rowIds(second.body), ids.slice(0, 3).reverse());
  assert.doesNotMatch(second.body, /Older/);
  assert.doesNotMatch(second.body, /data-stream/, "an older page is not live");
  assert.match(second.body, /href="\/events">« Newest/);
});

Deno.test("events page filters by subscription, status, event type and delivery id, and keeps them in its links", async () => {
  await using world = await dashboardWorld();
  const a = await world.store.accept(issueEvent({ deliveryId: "d-a" }));
  const b = await world.store.accept(issueEvent({ subscription: "ci", eventLabel: "push" }));
  const c = await world.store.accept(issueEvent({ eventLabel: "issues.closed" }));
  await world.store.claimDue(world.clock.nowMs, 1); // a runs
  const session = await logIn(world);
  const ids = async (query: string) => rowIds((await get(world, session, `/events?${query}`)).body);
  assert.deepEqual(await ids("subscription=ci"), [b.eventId]);
  assert.deepEqual(await ids("status=running"), [a.eventId]);
  assert.deepEqual(await ids("type=issues"), [c.eventId, a.eventId]);
  assert.deepEqual(await ids("type=issues.closed"), [c.eventId]);
  assert.deepEqual(await ids("delivery=d-a"), [a.eventId]);
  assert.deepEqual(await ids("subscription=gh&status=queued"), [c.eventId]);
  const page = await get(world, session, "/events?subscription=gh&type=issues");
  assert.match(page.body, /name="subscription" list="subscription-names" value="gh"/);
  assert.match(page.body, /data-stream="\/events\/stream\?subscription=gh&amp;type=issues&amp;/);
  const none = await get(world, session, "/events?subscription=nobody");
  assert.match(none.body, /No events match/);
});

Deno.test("events page says what is wrong with a bad filter, with 400", async () => {
  await using world = await dashboardWorld();
  const session = await logIn(world);
  const page = await get(world, session, "/events?status=lost");
  assert.equal(page.status, 400);
  assert.match(page.body, /status must be one of: queued, running, delivered, failed/);
  const api = await get(world, session, `/api/events?type=${"x".repeat(300)}`);
  assert.equal(api.status, 400);
  assert.match(api.body, /type must be at most 256 characters/);
});

Deno.test("event page shows the lineage: request, decisions, prompt, runs, answer, parts", async () => {
  await using world = await dashboardWorld();
  const { eventId } = await world.store.accept(issueEvent({
    route: { deliver: "github", chatId: "octo/repo#7", skills: ["triage"] },
    headers: { "x-github-event": "issues", "x-hub-signature-256": "[redacted]" },
    scheme: "github",
  }));
  await world.store.claimDue(world.clock.nowMs, 1);
  await world.store.saveResponse(eventId!, "Looks like a null pointer in main().", {
    provider: "openai",
    model: "gpt-4o-mini-2024-07-18",
    promptTokens: 812,
    completionTokens: 96,
    durationMs: 2100,
  });
  const url = "https://github.com/octo/repo/issues/7#issuecomment-501";
  await world.store.savePartsSent(eventId!, 1, {
    sentBefore: 0,
    parts: 1,
    receipts: [{
      ...{ part: 1, parts: 1, target: "github", chat: "octo/repo#7", messageId: "501", url },
      sentAtMs: world.clock.nowMs + 1400,
    }],
  });
  await world.store.markDelivered(eventId!, world.clock.nowMs + 1500);
  const session = await logIn(world);
  const page = await get(world, session, `/events/${eventId}`);
  assert.equal(page.status, 200);
  const body = page.body;
  assert.match(body, /<th class="mono">x-hub-signature-256<\/th><td class="mono">\[redacted\]/);
  assert.match(body, /<dt>Verified by<\/dt><dd id="scheme"><span class="mono">github</);
  assert.match(body, /<dt>title<\/dt><dd><span class="str">&quot;Crash on start&quot;/);
  assert.match(body, /<details open><summary>\{ 2 keys \}/, "a collapsible tree");
  assert.match(body, /&quot;title&quot;: &quot;Crash on start&quot;/, "and as text");
  assert.match(body, /same delivery id is answered as a duplicate/, "the dedupe decision");
  assert.match(body, /<h2>Prompt<\/h2><pre>Triage issue #7: Crash on start<\/pre>/);
  assert.match(body, /Skills given: triage/);
  assert.match(body, /<h2>Answer<\/h2><pre>Looks like a null pointer in main\(\)\.<\/pre>/);
  assert.match(body, /<td>delivery<\/td>/, "the attempt's step");
  assert.match(body, /<dd class="mono model">gpt-4o-mini-2024-07-18<\/dd>/);
  assert.match(body, /<dd class="prompt-tokens">812<\/dd>.*<dd class="completion-tokens">96</);
  assert.match(body, /<dt>Took<\/dt><dd>2\.1 s<\/dd>/, "the run's duration");
  assert.match(body, /<td>1\/1<\/td><td>github<\/td><td class="mono">octo\/repo#7<\/td>/);
  assert.match(body, new RegExp(`<a href="${url.replace(/[.?/]/g, "\\$&")}"[^>]*>501</a>`));
  assert.match(body, /<dt>Took<\/dt><dd>1\.5 s<\/dd>/);
  assert.match(body, /action="\/events\/evt_[^"]+\/replay"/);

  const api = JSON.parse((await get(world, session, `/api/events/${eventId}`)).body);
  assert.equal(api.scheme, "github");
  assert.deepEqual(api.headers, {
    "x-github-event": "issues",
    "x-hub-signature-256": "[redacted]",
  });
  assert.deepEqual(api.skills, ["triage"]);
  assert.deepEqual(api.attempts_detail[0].run, {
    provider: "openai",
    model: "gpt-4o-mini-2024-07-18",
    prompt_tokens: 812,
    completion_tokens: 96,
    duration_ms: 2100,
  });
  assert.equal(api.attempts_detail[0].answer, "Looks like a null pointer in main().");
  assert.deepEqual(api.parts, [{
    ...{ part: 1, parts: 1, target: "github", chat: "octo/repo#7", message_id: "501", url },
    sent_at_ms: world.clock.nowMs + 1400,
  }]);
});

Deno.test("event page links a part only to a web address", async () => {
  await using world = await dashboardWorld();
  const { eventId } = await world.store.accept(issueEvent());
  await world.store.claimDue(world.clock.nowMs, 1);
  await world.store.saveResponse(eventId!, "ok");
  const receipt = { part: 1, parts: 1, target: "log", chat: "gateway log", messageId: null };
  await world.store.savePartsSent(eventId!, 1, {
    sentBefore: 0,
    parts: 1,
    receipts: [{ ...receipt, url: "javascript:alert(1)", sentAtMs: world.clock.nowMs }],
  });
  const session = await logIn(world);
  const { body } = await get(world, session, `/events/${eventId}`);
  assert.doesNotMatch(body, /href="javascript:/);
  assert.match(body, /<td class="mono message-id">javascript:alert\(1\)<\/td>/);
});

Deno.test("event page shows what senders and agents wrote as text, never as markup", async () => {
  await using world = await dashboardWorld();
  const script = "<script>alert(1)</script>";
  const { eventId } = await world.store.accept(issueEvent({
    deliveryId: `"><img src=x onerror=alert(1)>`,
    payload: JSON.stringify({ [script]: script, deep: [[[[[[[[[[[{ x: script }]]]]]]]]]]] }),
    prompt: script,
  }));
  const session = await logIn(world);
  for (const path of [`/events/${eventId}`, "/events"]) {
    const { body } = await get(world, session, path);
    assert.doesNotMatch(body, /<script>alert|<img src=x/, path);
    assert.match(body, /&lt;script&gt;|&lt;img src=x/, path);
  }
});

Deno.test("event page of an unknown id, or of an ambiguous prefix, is 404", async () => {
  await using world = await dashboardWorld();
  const { eventId } = await world.store.accept(issueEvent());
  const session = await logIn(world);
  assert.equal((await get(world, session, "/events/evt_nothing")).status, 404);
  assert.equal((await get(world, session, `/events/${eventId!.slice(0, 8)}`)).status, 404);
  assert.equal((await get(world, session, "/api/events/evt_nothing")).status, 404);
});

Deno.test("Replay queues the event again as its subscription routes it now, and wakes the worker", async () => {
  await using world = await dashboardWorld({
    subscriptions: {
      gh: { events: ["issues"], prompt: "Now: {issue.title}", deliver: "log", secret: "s3cr3t-x" },
    },
  });
  const { eventId } = await world.store.accept(issueEvent());
  await world.store.claimDue(world.clock.nowMs, 1);
  await world.store.markFailed(eventId!, {
    error: "boom",
    step: "agent",
    nowMs: world.clock.nowMs,
  });
  const session = await logIn(world);
  const posted = await world.app.request(
    `/events/${eventId}/replay`,
    formPost(session, { _csrf: session.csrf }),
  );
  await posted.body?.cancel();
  assert.equal(posted.status, 303);
  assert.equal(posted.headers.get("location"), `/events/${eventId}?replayed=routed`);
  const event = (await world.store.getEvent(eventId!))!;
  assert.equal(event.status, "queued");
  assert.equal(event.prompt, "Now: Crash on start", "rendered by the subscription as it is now");
  assert.equal(world.wakes.count, 1);
  const page = await get(world, session, posted.headers.get("location")!);
  assert.match(page.body, /Queued again, as gh renders and routes it now \(to log\)/);
});

Deno.test("Replay of a running event is refused with 409 and says why", async () => {
  await using world = await dashboardWorld();
  const { eventId } = await world.store.accept(issueEvent());
  await world.store.claimDue(world.clock.nowMs, 1);
  const session = await logIn(world);
  const response = await world.app.request(
    `/events/${eventId}/replay`,
    formPost(session, { _csrf: session.csrf }),
  );
  assert.equal(response.status, 409);
  assert.match(await response.text(), /Not replayed: .*running/);
  assert.equal(world.wakes.count, 0);
});

Deno.test("GET /api/events and /api/events/:id answer what the pages show, as JSON, by cursor", async () => {
  await using world = await dashboardWorld();
  const ids: string[] = [];
  for (let i = 0; i < 51; i++) ids.push((await world.store.accept(issueEvent())).eventId!);
  const session = await logIn(world);
  const list = JSON.parse((await get(world, session, "/api/events")).body);
  assert.equal(list.events.length, 50);
  assert.equal(list.events[0].id, ids[50]);
  assert.equal(list.events[0].event, "issues.opened");
  assert.equal(list.events[0].status, "queued");
  assert.equal(list.next, `/api/events?before=${ids[1]}`);
  const rest = JSON.parse((await get(world, session, list.next)).body);
  assert.deepEqual(rest.events.map((e: { id: string }) => e.id), [ids[0]]);
  assert.equal(rest.next, null);
  const one = JSON.parse((await get(world, session, `/api/events/${ids[0]}`)).body);
  assert.equal(one.prompt, "Triage issue #7: Crash on start");
  assert.equal(JSON.parse(one.payload).issue.title, "Crash on start");
  assert.deepEqual(one.attempts_detail, []);
});
