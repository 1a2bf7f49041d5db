/**
 * The live feed (server/dashboard/_feed.ts) on a real SQLite store: what each poll finds new or
 * changed, the events it follows out of its window, and that it reads nothing while nobody
 * listens. Then the stream a page follows, as the browser reads it.
 */
import assert from "node:assert/strict";
import { EventFeed } from "../../../server/dashboard/mod.ts";
import { dashboardWorld, issueEvent, logIn } from "./_helpers.ts";

Deno.test("EventFeed.poll() gives new events and status changes once, oldest first", async () => {
  await using world = await dashboardWorld();
  const feed = new EventFeed(world.store);
  const old = await world.store.accept(issueEvent());
  assert.deepEqual(feed.poll(), [], "the first poll only learns what is there");
  const a = await world.store.accept(issueEvent());
  const b = await world.store.accept(issueEvent());
  assert.deepEqual(feed.poll().map((e) => e.id), [a.eventId, b.eventId]);
  assert.deepEqual(feed.poll(), [], "nothing changed");
  world.store.claimDue(world.clock.nowMs, 1); // `old` runs
  const [running] = feed.poll();
  assert.deepEqual([running.id, running.status], [old.eventId, "running"]);
  world.store.markDelivered(old.eventId!, world.clock.nowMs + 5);
  const [delivered] = feed.poll();
  assert.deepEqual([delivered.id, delivered.status], [old.eventId, "delivered"]);
});

Deno.test("EventFeed.poll() follows a queued event it saw out of its window to its outcome", async () => {
  await using world = await dashboardWorld();
  const feed = new EventFeed(world.store);
  const first = await world.store.accept(issueEvent());
  feed.poll();
  // 120 events newer than it, none of them queued: out of every window the poll reads.
  for (let i = 0; i < 120; i++) {
    await world.store.recordDirect(issueEvent({ mode: "direct" }), {
      delivered: true,
      partsSent: 1,
    });
  }
  for (let i = 0; i < 60; i++) await world.store.accept(issueEvent());
  feed.poll();
  const claimed = world.store.claimDue(world.clock.nowMs, 1);
  assert.equal(claimed[0].id, first.eventId);
  world.store.markFailed(first.eventId!, { error: "x", step: "agent", nowMs: world.clock.nowMs });
  const changed = feed.poll();
  assert.deepEqual(changed.map((e) => [e.id, e.status]), [[first.eventId, "failed"]]);
});

Deno.test("EventFeed polls while a page listens, and not at all once none does", async () => {
  await using world = await dashboardWorld();
  let timers = 0;
  let ticking: (() => void) | undefined;
  const feed = new EventFeed(world.store, {
    every: (_ms, tick) => {
      timers++;
      ticking = tick;
      return () => ticking = undefined;
    },
  });
  const heard: string[][] = [];
  const stopA = feed.listen((changed) => heard.push(changed.map((e) => e.id)));
  const stopB = feed.listen(() => {});
  assert.equal(timers, 1, "one timer for every listener");
  assert.deepEqual(heard, [[]], "the first listener's poll learns what is there");
  const { eventId } = await world.store.accept(issueEvent());
  ticking!();
  ticking!();
  assert.deepEqual(heard, [[], [eventId], []]);
  stopA();
  assert.ok(ticking, "still one listener");
  stopB();
  assert.equal(ticking, undefined, "no listener, no timer");
  assert.equal(feed.listeners, 0);
});

Deno.test("GET /events/stream sends what changed since the page was read, then each change live", async () => {
  await using world = await dashboardWorld();
  const session = await logIn(world);
  const since = world.clock.nowMs - 1; // as the events page gives it
  const before = await world.store.accept(issueEvent());
  const other = await world.store.accept(issueEvent({ subscription: "ci" }));
  const response = await world.app.request(`/events/stream?subscription=gh&since=${since}`, {
    headers: { cookie: session.cookie },
  });
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type")!, /text\/event-stream/);
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const messages: string[] = [];
  const next = async (what: string) => {
    while (!messages.some((m) => m.includes(what))) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended before ${what}`);
      messages.push(...value.split("\n\n"));
    }
    return messages.find((m) => m.includes(what))!;
  };
  const caughtUp = await next(before.eventId!);
  assert.match(caughtUp, /^event: change\ndata: \{"id":"evt_/);
  // Before the feed's first tick: still a change to send, not part of what was there.
  const live = await world.store.accept(issueEvent());
  world.tick();
  const arrived = JSON.parse((await next(live.eventId!)).split("data: ")[1]);
  assert.equal(arrived.status, "queued");
  assert.equal(arrived.subscription, "gh");
  assert.ok(!messages.some((m) => m.includes(other.eventId!)), "another subscription's event");
  await reader.cancel();
});

Deno.test("GET /events/stream?id= sends an event's page only the changes after the one it shows", async () => {
  await using world = await dashboardWorld();
  const session = await logIn(world);
  const { eventId } = await world.store.accept(issueEvent());
  const shown = world.store.getEvent(eventId!)!;
  const response = await world.app.request(
    `/events/stream?id=${eventId}&since=${shown.updatedAtMs}`,
    { headers: { cookie: session.cookie } },
  );
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  world.clock.nowMs += 1000;
  world.store.claimDue(world.clock.nowMs, 1);
  world.tick();
  let text = "";
  while (!text.includes('"status":"running"')) text += (await reader.read()).value;
  await reader.cancel();
  const changes = text.split("\n\n").filter((message) => message.startsWith("event: change"));
  assert.equal(changes.length, 1, "the version the page shows does not come back to it");
});
