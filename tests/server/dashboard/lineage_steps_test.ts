/**
 * An event's page and `/api/events/<id>` tell the routing steps of its story
 * (docs/dashboard.md#an-event), in-process on a real SQLite store: what its transform printed,
 * skipped or is still to do; the events coalesced into one run, and the run that answered a
 * folded one; its conversation's key and the earlier turns its run was given. And a Replay the
 * store refuses says so once.
 */
import assert from "node:assert/strict";
import type { NewEvent, RouteSnapshot } from "../../../lib/state/mod.ts";
import type { DashboardWorld } from "./_helpers.ts";
import { dashboardWorld, formPost, issueEvent, logIn } from "./_helpers.ts";

/** A GET of the dashboard in `session`, its status and body. */
async function get(world: DashboardWorld, session: { cookie: string }, path: string) {
  const response = await world.app.request(path, { headers: { cookie: session.cookie } });
  return { status: response.status, body: await response.text() };
}

/** Accepts an event, and answers its id. */
async function accept(world: DashboardWorld, event: NewEvent): Promise<string> {
  const result = await world.store.accept(event);
  assert.equal(result.status, "accepted");
  return result.eventId!;
}

const TRANSFORM: RouteSnapshot["transform"] = {
  command: ["node", "headline.js", "--upper"],
  timeoutSeconds: 5,
};

Deno.test("event page shows the transform's program and the JSON it printed, as a tree and as text", async () => {
  await using world = await dashboardWorld();
  const id = await accept(
    world,
    issueEvent({
      route: { deliver: "log", skills: [], transform: TRANSFORM },
      transformed: '{"headline":"DISK IS FULL","level":3}',
    }),
  );
  const session = await logIn(world);
  const { body } = await get(world, session, `/events/${id}`);
  const section = body.match(/<section class="block" id="transform">.*?<\/section>/s)![0];
  assert.match(section, /<dd class="mono" id="transform-program">node headline\.js --upper<\/dd>/);
  assert.match(section, /It printed the JSON the prompt was rendered from/);
  assert.match(section, /<dt>headline<\/dt><dd><span class="str">&quot;DISK IS FULL&quot;/);
  assert.match(section, /<details open><summary>\{ 2 keys \}/, "a tree that folds");
  assert.match(section, /<pre>\{\n {2}&quot;headline&quot;: &quot;DISK IS FULL&quot;,\n/);

  const api = JSON.parse((await get(world, session, `/api/events/${id}`)).body);
  assert.deepEqual(api.transform, {
    command: ["node", "headline.js", "--upper"],
    timeout_seconds: 5,
    state: "printed",
  });
  assert.equal(api.transformed, '{"headline":"DISK IS FULL","level":3}');
});

Deno.test("event page says a transform skipped the event, or is pending with its last error", async () => {
  await using world = await dashboardWorld();
  const route = { deliver: "log", skills: [], transform: TRANSFORM };
  const skipped = await accept(world, issueEvent({ route, transformed: '{"skip":true}' }));
  const pending = await accept(world, issueEvent({ route }));
  await world.store.claimDue(world.clock.nowMs, 2);
  await world.store.markRetry(pending, {
    error: "transform node exited with status 1: TypeError: <no title>",
    step: "agent",
    nextAttemptAtMs: world.clock.nowMs + 30_000,
    nowMs: world.clock.nowMs,
  });
  const session = await logIn(world);
  const skip = await get(world, session, `/events/${skipped}`);
  assert.match(skip.body, /<p id="transform-outcome">It skipped the event/);
  const wait = await get(world, session, `/events/${pending}`);
  assert.match(wait.body, /<p id="transform-outcome">Pending: .* runs again with the next/);
  assert.match(
    wait.body,
    /id="transform-error">transform node exited with status 1: TypeError: &lt;no title&gt;</,
  );
  const api = async (id: string) =>
    JSON.parse((await get(world, session, `/api/events/${id}`)).body);
  assert.equal((await api(skipped)).transform.state, "skipped");
  assert.equal((await api(pending)).transform.state, "pending");
  assert.equal((await api(pending)).transformed, null);
});

Deno.test("event page of a coalesced run lists the events folded into it, in order; theirs link back", async () => {
  await using world = await dashboardWorld();
  const coalesce = { key: "octo/repo#7", windowSeconds: 10, maxSeconds: 300 };
  const route = { deliver: "log", skills: [], coalesce };
  const t = world.clock.nowMs;
  const ids: string[] = [];
  for (const [i, label] of ["issues.opened", "issue_comment.created", "issues.labeled"].entries()) {
    ids.push(await accept(world, issueEvent({ route, eventLabel: label, receivedAtMs: t + i })));
  }
  const session = await logIn(world);
  const waiting = await get(world, session, `/events/${ids[0]}`);
  assert.match(waiting.body, /Its window is open: the first event of the window runs for all/);
  const [claimed] = await world.store.claimDue(t + 11_000, 1);
  assert.equal(claimed.id, ids[0], "the first of the window runs for all");
  const lead = await get(world, session, `/events/${ids[0]}`);
  const section = lead.body.match(/<section class="block" id="coalescing">.*?<\/section>/s)![0];
  assert.match(section, /Key <span class="mono">octo\/repo#7<\/span>/);
  assert.match(section, /answered 2 more events/);
  const linked = [...section.matchAll(/<li><a class="mono" href="\/events\/([^"]+)">/g)]
    .map((m) => m[1]);
  assert.deepEqual(linked, [ids[1], ids[2]]);
  assert.match(section, /issue_comment\.created.*issues\.labeled/s);

  const folded = await get(world, session, `/events/${ids[2]}`);
  assert.match(
    folded.body,
    new RegExp(
      `id="coalesced-into">Folded into the agent run of <a class="mono" ` +
        `href="/events/${ids[0]}">${ids[0]}</a>`,
    ),
  );
  const api = JSON.parse((await get(world, session, `/api/events/${ids[0]}`)).body);
  assert.deepEqual(api.folded.map((one: { id: string }) => one.id), [ids[1], ids[2]]);
  assert.equal(api.folded[0].event, "issue_comment.created");
  const apiFolded = JSON.parse((await get(world, session, `/api/events/${ids[1]}`)).body);
  assert.equal(apiFolded.coalesced_into, ids[0]);
});

Deno.test("event page shows the session key and the earlier turns its run was given, within the budget", async () => {
  await using world = await dashboardWorld();
  // About 25 tokens a turn: a budget of 60 holds the newest two.
  const route = { deliver: "log", skills: [], sessionBudget: 60 };
  const conversation = { route, sessionKey: "octo/repo#12" };
  const ids: string[] = [];
  for (let turn = 1; turn <= 3; turn++) {
    const id = await accept(
      world,
      issueEvent({ ...conversation, prompt: `Turn ${turn} `.repeat(8) }),
    );
    ids.push(id);
    world.clock.nowMs += 1000;
    await world.store.claimDue(world.clock.nowMs, 1);
    await world.store.saveResponse(id, `Answer ${turn} `.repeat(5));
    await world.store.markDelivered(id, world.clock.nowMs);
  }
  const next = await accept(world, issueEvent(conversation));
  const other = await accept(world, issueEvent({ ...conversation, sessionKey: "octo/repo#13" }));
  const session = await logIn(world);
  const turns = async (id: string) => {
    const { body } = await get(world, session, `/events/${id}`);
    assert.match(body, /<dt>Session key<\/dt><dd class="mono" id="session-key">octo\/repo#1[23]</);
    return body.match(/<dd id="turns-given">([^<]*)<\/dd>/)![1];
  };
  assert.equal(await turns(ids[0]), "its run was given 0 earlier turns, within 60 tokens");
  assert.equal(await turns(ids[1]), "its run was given 1 earlier turn, within 60 tokens");
  assert.equal(
    await turns(ids[2]),
    "its run was given 2 earlier turns, within 60 tokens",
  );
  assert.equal(
    await turns(next),
    "its run will be given those held then: 2 turns now (of 3 held before it: the older did " +
      "not fit)",
  );
  assert.equal(await turns(other), "its run will be given those held then: 0 turns now");
  const api = JSON.parse((await get(world, session, `/api/events/${ids[2]}`)).body);
  assert.deepEqual(api.session, {
    key: "octo/repo#12",
    own_turn: true,
    turns_given: 2,
    turns_held_before: 2,
  });
  const none = JSON.parse(
    (await get(
      world,
      session,
      `/api/events/${await accept(
        world,
        issueEvent(),
      )}`,
    )).body,
  );
  assert.equal(none.session, null);
  assert.equal(none.transform, null);
  assert.deepEqual(none.folded, []);
});

Deno.test("Replay refused by the store says 'Not replayed' once, with 409", async () => {
  await using world = await dashboardWorld();
  const message = issueEvent({
    mode: "direct",
    deliveryId: "d-1",
    route: { deliver: "log", skills: [] },
  });
  const failed = await world.store.recordDirect(message, {
    delivered: false,
    error: "Telegram failed (HTTP 500)",
    partsSent: 0,
  });
  const retry = { ...message, receivedAtMs: message.receivedAtMs + 1000 };
  await world.store.recordDirect(retry, { delivered: true, partsSent: 1 });
  const session = await logIn(world);
  const response = await world.app.request(
    `/events/${failed}/replay`,
    formPost(session, { _csrf: session.csrf }),
  );
  assert.equal(response.status, 409);
  const body = await response.text();
  assert.match(body, /<div class="notice bad">Not replayed: the sender retried delivery d-1/);
  assert.doesNotMatch(body, /Not replayed: Not replayed/);
});
