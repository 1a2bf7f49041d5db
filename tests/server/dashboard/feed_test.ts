/**
 * The live feed (server/dashboard/_feed.ts) on a real SQLite store: what each tick finds new or
 * changed in what a page shows, from the page's own read on; that it reads no more than a page
 * however busy the gateway is, and nothing while nobody listens; that a slow read is spaced out.
 * Then the stream a page follows, as the browser reads it, under load.
 */
import assert from "node:assert/strict";
import type { StateStore, StoredEvent } from "../../../lib/state/mod.ts";
import { EventFeed, FEED_INTERVAL_MS } from "../../../server/dashboard/mod.ts";
import { PAGE_SIZE } from "../../../server/dashboard/_events_page.tsx";
import { type DashboardWorld, dashboardWorld, issueEvent, logIn } from "./_helpers.ts";

type Reads = Pick<StateStore, "listEvents" | "getEvent">;

/** A feed of `store` whose timer is the test's: `tick()` runs it. */
function manualFeed(store: Reads, options: { clockMs?: () => number } = {}) {
  const timer: { tick?: () => Promise<void> } = {};
  const feed = new EventFeed(store, {
    clockMs: () => 0, // every read instant, unless the test says otherwise
    ...options,
    every: (_ms, tick) => {
      timer.tick = tick;
      return () => timer.tick = undefined;
    },
  });
  return { feed, timer };
}

/** The store's reads, counting the events they return. */
function countingReads(store: Reads, onRead: (rows: number) => void = () => {}) {
  const counted = { rows: 0, reads: 0 };
  const reads: Reads = {
    listEvents: async (filter) => {
      counted.reads += 1;
      const events = await store.listEvents(filter);
      counted.rows += events.length;
      onRead(events.length);
      return events;
    },
    getEvent: async (id) => {
      counted.reads += 1;
      const event = await store.getEvent(id);
      counted.rows += event ? 1 : 0;
      onRead(1);
      return event;
    },
  };
  return { reads, counted };
}

const ids = (events: StoredEvent[]) => events.map((event) => event.id);

Deno.test("EventFeed gives new events and status changes of a page once, oldest first", async () => {
  await using world = await dashboardWorld();
  const { feed, timer } = manualFeed(world.store);
  const old = await world.store.accept(issueEvent());
  const heard: StoredEvent[][] = [];
  feed.listen({ filter: {} }, (changed) => heard.push(changed));
  assert.equal(heard.length, 0, "listening learns what is there and tells nothing");
  const a = await world.store.accept(issueEvent());
  const b = await world.store.accept(issueEvent());
  await timer.tick!();
  await timer.tick!();
  assert.deepEqual(heard.map(ids), [[a.eventId, b.eventId], []]);
  await world.store.claimDue(world.clock.nowMs, 1); // `old` runs
  await timer.tick!();
  await world.store.markDelivered(old.eventId!, world.clock.nowMs + 5);
  await timer.tick!();
  assert.deepEqual(
    heard.slice(2).map((changed) => changed.map((event) => [event.id, event.status])),
    [[[old.eventId, "running"]], [[old.eventId, "delivered"]]],
  );
});

Deno.test("EventFeed starts a view from what its page read, missing no change made since", async () => {
  await using world = await dashboardWorld();
  const { feed, timer } = manualFeed(world.store);
  const shown = await world.store.listEvents({ limit: PAGE_SIZE });
  // Accepted after the page's read and before it listens, as while a database server answers.
  const between = await world.store.accept(issueEvent());
  const heard: string[][] = [];
  feed.listen({ filter: {} }, (changed) => heard.push(ids(changed)), shown);
  await timer.tick!();
  assert.deepEqual(heard, [[between.eventId]]);
});

Deno.test("EventFeed reads at most a page a tick, however many events arrive and wait", async () => {
  await using world = await dashboardWorld();
  const { reads, counted } = countingReads(world.store);
  const { feed, timer } = manualFeed(reads);
  const heard: StoredEvent[][] = [];
  feed.listen({ filter: {} }, (changed) => heard.push(changed));
  for (let tick = 0; tick < 4; tick++) {
    // Agent-mode events that stay queued, as behind an LLM that does not answer.
    for (let i = 0; i < 2 * PAGE_SIZE; i++) await world.store.accept(issueEvent());
    counted.rows = 0;
    await timer.tick!();
    assert.ok(counted.rows <= PAGE_SIZE, `tick ${tick} read ${counted.rows} events`);
  }
  const newest = await world.store.listEvents({ limit: PAGE_SIZE });
  assert.deepEqual(heard.at(-1)!.map((event) => event.id), ids(newest).reverse(), "the first page");
});

Deno.test("EventFeed sends a status-filtered page its rows' change out of the filter once", async () => {
  await using world = await dashboardWorld();
  const { feed, timer } = manualFeed(world.store);
  const { eventId } = await world.store.accept(issueEvent());
  const heard: StoredEvent[][] = [];
  feed.listen({ filter: { status: "queued" } }, (changed) => heard.push(changed));
  await world.store.claimDue(world.clock.nowMs, 1);
  await timer.tick!();
  await timer.tick!();
  assert.deepEqual(heard.map((c) => c.map((e) => [e.id, e.status])), [[[eventId, "running"]], []]);
});

Deno.test("EventFeed reads a view whose read is slow less often, telling its listeners each tick", async () => {
  await using world = await dashboardWorld();
  let nowMs = 0;
  // Each read takes 30 ms on this clock: 3% of a second, so the view rests two ticks of three.
  const { reads, counted } = countingReads(world.store, () => nowMs += 30);
  const { feed, timer } = manualFeed(reads, { clockMs: () => nowMs });
  const heard: string[][] = [];
  feed.listen({ filter: { eventType: "push" } }, (changed) => heard.push(ids(changed)));
  await timer.tick!();
  assert.equal(counted.reads, 2, "the first read, when listening, is not timed");
  const { eventId } = await world.store.accept(issueEvent({ eventLabel: "push" }));
  for (let tick = 0; tick < 3; tick++) await timer.tick!();
  assert.deepEqual(heard, [[], [], [], [eventId]], "a listener hears every tick");
  assert.equal(counted.reads, 3, `${FEED_INTERVAL_MS} ms ticks: one read in three`);
});

Deno.test("EventFeed reads each page's view while it listens, and nothing once none does", async () => {
  await using world = await dashboardWorld();
  const { reads, counted } = countingReads(world.store);
  const { feed, timer } = manualFeed(reads);
  const heardGh: string[][] = [];
  const heardCi: string[][] = [];
  const stopA = feed.listen({ filter: { subscription: "gh" } }, (c) => heardGh.push(ids(c)));
  const stopB = feed.listen({ filter: { subscription: "gh" } }, () => {});
  const stopC = feed.listen({ filter: { subscription: "ci" } }, (c) => heardCi.push(ids(c)));
  assert.equal(counted.reads, 2, "one read a view, for all its listeners");
  const gh = await world.store.accept(issueEvent());
  const ci = await world.store.accept(issueEvent({ subscription: "ci" }));
  await timer.tick!();
  assert.deepEqual([heardGh, heardCi], [[[gh.eventId]], [[ci.eventId]]]);
  assert.equal(feed.listeners, 3);
  stopA();
  stopC();
  counted.reads = 0;
  await timer.tick!();
  assert.equal(counted.reads, 1, "the view still followed");
  stopB();
  assert.equal(timer.tick, undefined, "no listener, no timer");
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
  await world.tick();
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
  const shown = (await world.store.getEvent(eventId!))!;
  const response = await world.app.request(
    `/events/stream?id=${eventId}&since=${shown.updatedAtMs}`,
    { headers: { cookie: session.cookie } },
  );
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  world.clock.nowMs += 1000;
  await world.store.claimDue(world.clock.nowMs, 1);
  await world.tick();
  let text = "";
  while (!text.includes('"status":"running"')) text += (await reader.read()).value;
  await reader.cancel();
  const changes = text.split("\n\n").filter((message) => message.startsWith("event: change"));
  assert.equal(changes.length, 1, "the version the page shows does not come back to it");
});

/** Follows `/events/stream?<query>` as the page's script does, reading its change messages. */
async function followStream(world: DashboardWorld, cookie: string, query: string) {
  const response = await world.app.request(`/events/stream?${query}`, { headers: { cookie } });
  assert.equal(response.status, 200);
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const changes: { id: string; status: string; subscription: string }[] = [];
  let pending = "";
  return {
    changes,
    /** Reads until the change of `id` to `status` has come. */
    async until(id: string, status: string) {
      while (!changes.some((change) => change.id === id && change.status === status)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended before ${id} was ${status}`);
        const messages = (pending + value).split("\n\n");
        pending = messages.pop()!;
        for (const message of messages.filter((m) => m.startsWith("event: change\n"))) {
          changes.push(JSON.parse(message.split("data: ")[1]));
        }
      }
    },
    cancel: () => reader.cancel(),
  };
}

Deno.test("GET /events/stream keeps a subscription's page whole while another floods the gateway", async () => {
  await using world = await dashboardWorld();
  const session = await logIn(world);
  const shown = await world.store.accept(issueEvent({ subscription: "ci" }));
  const stream = await followStream(world, session.cookie, `subscription=ci&since=0`);
  await stream.until(shown.eventId!, "queued");
  const arrived: string[] = [];
  for (let tick = 0; tick < 3; tick++) {
    arrived.push((await world.store.accept(issueEvent({ subscription: "ci" }))).eventId!);
    for (let i = 0; i < PAGE_SIZE + 10; i++) await world.store.accept(issueEvent());
    if (tick === 1) await world.store.claimDue(world.clock.nowMs, 1); // `shown`, the oldest, runs
    await world.tick();
  }
  const last = await world.store.accept(issueEvent({ subscription: "ci" }));
  await world.tick();
  await stream.until(last.eventId!, "queued");
  await stream.cancel();
  for (const id of arrived) {
    assert.ok(stream.changes.some((change) => change.id === id), `ci event ${id} was sent`);
  }
  assert.ok(stream.changes.some((c) => c.id === shown.eventId && c.status === "running"));
  assert.ok(stream.changes.every((change) => change.subscription === "ci"));
});

Deno.test("GET /events/stream closed while it reads the page leaves no view in the feed", async () => {
  await using world = await dashboardWorld();
  const session = await logIn(world);
  const gate = Promise.withResolvers<void>();
  const reading = Promise.withResolvers<void>();
  const listEvents = world.store.listEvents.bind(world.store);
  world.store.listEvents = async (filter) => {
    reading.resolve();
    await gate.promise; // a database slow to answer
    return listEvents(filter);
  };
  const response = await world.app.request(`/events/stream?since=0`, {
    headers: { cookie: session.cookie },
  });
  await reading.promise;
  await response.body!.cancel(); // the page is closed before its first read is done
  gate.resolve();
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(world.feed.listeners, 0, "the closed page follows nothing");
});
