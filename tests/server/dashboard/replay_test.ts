/**
 * Replay with changes on the dashboard, in-process against a real SQLite store and a real
 * subscription file: the form's prefill, the event queued again with the edited prompt and
 * model (the subscription untouched), the refusals, and the new answer beside the previous one
 * as a line diff drawn on the server.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type DashboardWorld, dashboardWorld, formPost, issueEvent, logIn } from "./_helpers.ts";

/** A subscription `gh` with a template and a model of its own. */
const GH = {
  events: ["issues"],
  prompt: "Triage issue #{issue.number}: {issue.title}",
  deliver: "log",
  model: "gpt-4o-mini",
};

/** Accepts an `issues.opened` event of `gh` and answers it once, delivered. */
async function answeredEvent(world: DashboardWorld, answer: string): Promise<string> {
  const { eventId } = await world.store.accept(issueEvent());
  await world.store.claimDue(world.clock.nowMs, 1);
  await world.store.saveResponse(eventId!, answer, {
    provider: "openai",
    model: "gpt-4o-mini-2024-07-18",
    promptTokens: 40,
    completionTokens: 12,
    durationMs: 900,
  });
  await world.store.markDelivered(eventId!, world.clock.nowMs + 1000);
  return eventId!;
}

/** GETs a dashboard page with the session and reads it. */
async function page(world: DashboardWorld, cookie: string, path: string) {
  const response = await world.app.request(path, { headers: { cookie } });
  return { status: response.status, html: await response.text() };
}

Deno.test("Replay with changes: the form is prefilled with the subscription's template and model", async () => {
  await using world = await dashboardWorld({ subscriptions: { gh: GH } });
  const session = await logIn(world);
  const id = await answeredEvent(world, "first");
  const detail = await page(world, session.cookie, `/events/${id}`);
  assert.match(detail.html, new RegExp(`href="/events/${id}/replay-with-changes"`));
  const form = await page(world, session.cookie, `/events/${id}/replay-with-changes`);
  assert.equal(form.status, 200);
  assert.match(form.html, /<textarea[^>]*name="prompt"[^>]*>\nTriage issue #\{issue.number\}/);
  assert.match(form.html, /name="render" value="template" checked/);
  assert.match(form.html, /name="model" value="gpt-4o-mini"/);
  assert.match(form.html, /Last answered by gpt-4o-mini-2024-07-18/);
});

Deno.test("Replay with changes queues the event with the edited template and model, once", async () => {
  await using world = await dashboardWorld({ subscriptions: { gh: GH } });
  const session = await logIn(world);
  const id = await answeredEvent(world, "first");
  const before = await Deno.readTextFile(join(world.home, "webhook_subscriptions.json"));
  world.clock.nowMs += 60_000;
  const sent = await world.app.request(
    `/events/${id}/replay-with-changes`,
    formPost(session, {
      _csrf: session.csrf,
      prompt: "Summarise\r\n{issue.title} (#{issue.number})",
      render: "template",
      model: " gpt-4o ",
    }),
  );
  await sent.body?.cancel();
  assert.equal(sent.status, 303);
  assert.equal(sent.headers.get("location"), `/events/${id}?replayed=changed`);
  const event = (await world.store.getEvent(id))!;
  assert.equal(event.status, "queued");
  assert.equal(event.prompt, "Summarise\nCrash on start (#7)");
  assert.equal(event.route.agent?.model, "gpt-4o");
  assert.equal(event.replayedAtMs, world.clock.nowMs, "recorded as a replay");
  assert.equal(event.response, null, "the new run answers anew");
  assert.equal(world.wakes.count, 1, "the worker was woken");
  const after = await Deno.readTextFile(join(world.home, "webhook_subscriptions.json"));
  assert.equal(after, before, "the subscription is not changed");
  const detail = await page(world, session.cookie, `/events/${id}?replayed=changed`);
  assert.match(detail.html, /Queued again with your changes \(to log\)/);
});

Deno.test("Replay with changes prefills the stored prompt when the subscription has no template, sent as written", async () => {
  const { prompt: _none, ...plain } = GH;
  await using world = await dashboardWorld({ subscriptions: { gh: plain } });
  const session = await logIn(world);
  const id = await answeredEvent(world, "first");
  const form = await page(world, session.cookie, `/events/${id}/replay-with-changes`);
  assert.match(form.html, /name="prompt"[^>]*>\nTriage issue #7: Crash on start<\/textarea>/);
  assert.doesNotMatch(form.html, /name="render" value="template" checked/);
  const sent = await world.app.request(
    `/events/${id}/replay-with-changes`,
    formPost(session, { _csrf: session.csrf, prompt: "As written: {issue.title}\\n", model: "" }),
  );
  await sent.body?.cancel();
  assert.equal(sent.status, 303);
  const event = (await world.store.getEvent(id))!;
  assert.equal(event.prompt, "As written: {issue.title}\\n");
  assert.equal(event.route.agent?.model, "gpt-4o-mini", "the subscription's model, kept");
});

Deno.test("Replay with changes of an event whose subscription is gone keeps its target, with the changes", async () => {
  await using world = await dashboardWorld({ subscriptions: {} });
  const session = await logIn(world);
  const id = await answeredEvent(world, "first");
  const form = await page(world, session.cookie, `/events/${id}/replay-with-changes`);
  assert.match(form.html, /subscription gh no longer exists/);
  const sent = await world.app.request(
    `/events/${id}/replay-with-changes`,
    formPost(session, {
      _csrf: session.csrf,
      prompt: "Again: {issue.title}",
      render: "template",
      model: "gpt-4o",
    }),
  );
  await sent.body?.cancel();
  assert.equal(sent.headers.get("location"), `/events/${id}?replayed=changed-kept`);
  const event = (await world.store.getEvent(id))!;
  assert.equal(event.prompt, "Again: Crash on start");
  assert.deepEqual(event.route, { deliver: "log", skills: [], agent: { model: "gpt-4o" } });
});

Deno.test("Replay with changes refuses a bad form, keeping what was typed, and a running event", async () => {
  await using world = await dashboardWorld({ subscriptions: { gh: GH } });
  const session = await logIn(world);
  const id = await answeredEvent(world, "first");
  const post = (fields: Record<string, string>) =>
    world.app.request(
      `/events/${id}/replay-with-changes`,
      formPost(session, { _csrf: session.csrf, ...fields }),
    );
  const empty = await post({ prompt: "  ", model: "my-model" });
  const emptyHtml = await empty.text();
  assert.equal(empty.status, 400);
  assert.match(emptyHtml, /The prompt is empty/);
  assert.match(emptyHtml, /name="model" value="my-model"/, "what was typed is kept");
  const model = await post({ prompt: "x", model: "gpt\nevil" });
  assert.equal(model.status, 400);
  assert.match(await model.text(), /The model must be a model name/);
  const long = await post({ prompt: "x".repeat(64_001), render: "template" });
  assert.equal(long.status, 400);
  assert.match(await long.text(), /The prompt has 64001 characters; at most 64000/);
  const crossSite = await post({ _csrf: "forged", prompt: "x" });
  await crossSite.body?.cancel();
  assert.equal(crossSite.status, 403);
  assert.equal((await world.store.getEvent(id))!.replayedAtMs, null, "nothing was queued");

  const { eventId: running } = await world.store.accept(issueEvent());
  await world.store.claimDue(world.clock.nowMs, 1);
  const busy = await world.app.request(
    `/events/${running}/replay-with-changes`,
    formPost(session, { _csrf: session.csrf, prompt: "x" }),
  );
  assert.equal(busy.status, 409);
  assert.match(await busy.text(), /Not replayed: .*running/);
});

Deno.test("Replay with changes is not offered for a direct message", async () => {
  await using world = await dashboardWorld({ subscriptions: { gh: GH } });
  const session = await logIn(world);
  const { eventId } = await world.store.accept(issueEvent({ mode: "direct" }));
  const detail = await page(world, session.cookie, `/events/${eventId}`);
  assert.doesNotMatch(detail.html, /Replay with changes/);
  const form = await page(world, session.cookie, `/events/${eventId}/replay-with-changes`);
  assert.equal(form.status, 409);
  assert.match(form.html, /is a direct message/);
  const missing = await page(world, session.cookie, "/events/evt_nope/replay-with-changes");
  assert.equal(missing.status, 404);
});

Deno.test("an event's page shows the replay's answer beside the previous one as a line diff", async () => {
  await using world = await dashboardWorld({ subscriptions: { gh: GH } });
  const session = await logIn(world);
  const id = await answeredEvent(world, "Severity: high\nCause: null pointer\nOwner: core");
  const once = await page(world, session.cookie, `/events/${id}`);
  assert.doesNotMatch(once.html, /id="comparison"/, "nothing to compare before a replay");

  await world.store.replay(id, world.clock.nowMs);
  await world.store.claimDue(world.clock.nowMs, 1);
  await world.store.saveResponse(
    id,
    "Severity: low\nCause: null pointer\nOwner: core\nFix: guard",
    {
      provider: "openai",
      model: "gpt-4o-2024-08-06",
      promptTokens: 41,
      completionTokens: 15,
      durationMs: 800,
    },
  );
  const twice = await page(world, session.cookie, `/events/${id}`);
  const comparison = twice.html.slice(twice.html.indexOf('id="comparison"'));
  assert.match(comparison, /Previous: series 1 · gpt-4o-mini-2024-07-18/);
  assert.match(comparison, /New: series 2 · gpt-4o-2024-08-06/);
  assert.match(comparison, /1 line removed, 2 lines added\./);
  assert.match(comparison, /<del>Severity: high<\/del>/);
  assert.match(comparison, /<ins>Severity: low<\/ins>/);
  assert.match(comparison, /<ins>Fix: guard<\/ins>/);
  assert.match(comparison, /<td class="line">Cause: null pointer<\/td>/, "an unchanged line");
});
