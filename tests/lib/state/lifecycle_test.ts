import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { ConflictError, NotFoundError } from "../../../lib/errors.ts";
import { openStateStore, type StateStore } from "../../../lib/state/mod.ts";
import { SCHEMA_VERSION } from "../../../lib/state/sqlite/_schema.ts";
import { newEvent, tempHome, withStore } from "./_fixtures.ts";

const T0 = 1_700_000_000_000;

Deno.test("claimDue() claims due events only, marks them running and opens an attempt", async () => {
  await withStore({}, async (store) => {
    const due = await store.accept(newEvent({ receivedAtMs: T0 }));
    const later = await store.accept(newEvent({ receivedAtMs: T0 + 5_000 }));
    assert.equal(store.nextDueAtMs(), T0);
    const claimed = store.claimDue(T0 + 1_000, 10);
    assert.deepEqual(claimed.map((event) => event.id), [due.eventId]);
    assert.equal(claimed[0].status, "running");
    assert.equal(claimed[0].attempts, 1);
    assert.equal(store.getEvent(due.eventId!)?.status, "running");
    assert.equal(store.getEvent(later.eventId!)?.status, "queued");
    assert.equal(store.nextDueAtMs(), T0 + 5_000);
    assert.deepEqual(store.attempts(due.eventId!), [
      {
        eventId: due.eventId,
        attempt: 1,
        startedAtMs: T0 + 1_000,
        finishedAtMs: null,
        step: "agent",
        error: null,
      },
    ]);
    assert.equal(store.claimDue(T0 + 1_000, 10).length, 0, "a running event is not claimed twice");
  });
});

Deno.test("claimDue() respects its limit and claims the earliest due first", async () => {
  await withStore({}, async (store) => {
    const ids = [];
    for (const offset of [300, 100, 200]) {
      ids.push((await store.accept(newEvent({ receivedAtMs: T0 + offset }))).eventId);
    }
    const claimed = store.claimDue(T0 + 1_000, 2);
    assert.deepEqual(claimed.map((event) => event.id), [ids[1], ids[2]]);
  });
});

Deno.test("claimDue() with deliveryOnly claims only events that need no agent run", async () => {
  await withStore({}, async (store) => {
    const waiting = await store.accept(newEvent({ receivedAtMs: T0 }));
    const answered = await store.accept(newEvent({ receivedAtMs: T0 + 1 }));
    store.claimDue(T0 + 1, 2); // both run; the agent answers the second, whose delivery fails
    store.markRetry(waiting.eventId!, {
      error: "503",
      step: "agent",
      nextAttemptAtMs: T0 + 10,
      nowMs: T0 + 2,
    });
    store.saveResponse(answered.eventId!, "All good");
    store.markRetry(answered.eventId!, {
      error: "Telegram 502",
      step: "delivery",
      nextAttemptAtMs: T0 + 10,
      nowMs: T0 + 2,
    });
    const failedDirect = await store.recordDirect(
      newEvent({ mode: "direct", prompt: "Deploy done", receivedAtMs: T0 }),
      { delivered: false, error: "502", partsSent: 0 },
    );
    store.replay(failedDirect, T0 + 10);
    const claimed = store.claimDue(T0 + 10, 10, { deliveryOnly: true });
    assert.deepEqual(
      claimed.map((event) => event.id).sort(),
      [answered.eventId!, failedDirect].sort(),
    );
    assert.equal(store.getEvent(waiting.eventId!)?.status, "queued");
    assert.deepEqual(store.claimDue(T0 + 10, 10, { deliveryOnly: true }), []);
    assert.deepEqual(store.claimDue(T0 + 10, 10).map((event) => event.id), [waiting.eventId]);
  });
});

Deno.test("markRetry() requeues with the error, and markDelivered() keeps the saved response", async () => {
  await withStore({}, async (store) => {
    const { eventId } = await store.accept(newEvent({ receivedAtMs: T0 }));
    const id = eventId!;
    store.claimDue(T0, 1);
    store.markRetry(id, {
      error: "LLM endpoint answered 503",
      step: "agent",
      nextAttemptAtMs: T0 + 10_000,
      nowMs: T0 + 50,
    });
    let event = store.getEvent(id)!;
    assert.equal(event.status, "queued");
    assert.equal(event.nextAttemptAtMs, T0 + 10_000);
    assert.equal(event.lastError, "LLM endpoint answered 503");
    assert.equal(store.nextDueAtMs(), T0 + 10_000);

    const [second] = store.claimDue(T0 + 10_000, 1);
    assert.equal(second.attempts, 2);
    store.saveResponse(id, "All good");
    store.savePartsSent(id, 2, { sentBefore: 0, parts: 2 });
    store.markDelivered(id, T0 + 10_500);
    event = store.getEvent(id)!;
    assert.equal(event.status, "delivered");
    assert.equal(event.response, "All good");
    assert.equal(event.partsSent, 2);
    assert.equal(event.uncountedAttempts, 0, "an attempt that got the whole message out counts");
    assert.equal(event.nextAttemptAtMs, null);
    assert.deepEqual(
      store.attempts(id).map((a) => [a.attempt, a.step, a.error, a.finishedAtMs]),
      [[1, "agent", "LLM endpoint answered 503", T0 + 50], [2, "delivery", null, T0 + 10_500]],
    );
  });
});

Deno.test("markFailed() dead-letters the event and records the step that failed", async () => {
  await withStore({}, async (store) => {
    const id = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
    store.claimDue(T0, 1);
    store.saveResponse(id, "answer");
    store.markFailed(id, {
      error: "Slack answered 404 channel_not_found",
      step: "delivery",
      nowMs: T0 + 10,
    });
    const event = store.getEvent(id)!;
    assert.equal(event.status, "failed");
    assert.equal(event.lastError, "Slack answered 404 channel_not_found");
    assert.equal(store.attempts(id)[0].step, "delivery");
    assert.equal(store.nextDueAtMs(), null);
    assert.equal(store.claimDue(T0 + 100_000, 5).length, 0);
  });
});

Deno.test("markDelivered() throws NotFoundError for an unknown event", async () => {
  await withStore({}, (store) => {
    assert.throws(() => store.markDelivered("evt_nope", T0), NotFoundError);
  });
});

Deno.test("recoverInterrupted() requeues events left running by a crash, due now", async () => {
  const home = await tempHome();
  try {
    const first = openStateStore(home.dbPath);
    const a = (await first.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
    const b = (await first.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
    first.claimDue(T0, 1);
    await first.close(); // the gateway stops while `a` runs

    const second = openStateStore(home.dbPath);
    assert.equal(second.recoverInterrupted(T0 + 60_000), 1);
    assert.equal(second.getEvent(a)?.status, "queued");
    assert.equal(second.getEvent(a)?.nextAttemptAtMs, T0 + 60_000);
    assert.equal(second.getEvent(b)?.status, "queued");
    const resumed = second.claimDue(T0 + 60_000, 2).find((event) => event.id === a)!;
    assert.equal(resumed.attempts, 2, "the interrupted attempt counts");
    assert.match(second.attempts(a)[0].error ?? "", /interrupted/);
    assert.equal(second.recoverInterrupted(T0 + 60_000), 2, "both were claimed again");
    await second.close();
  } finally {
    await home.cleanup();
  }
});

Deno.test("an attempt that delivered a part does not count, whether it then fails or a crash cuts it off", async () => {
  const home = await tempHome();
  try {
    const first = openStateStore(home.dbPath, { backgroundCheckpoints: false });
    const id = (await first.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
    first.claimDue(T0, 1);
    first.saveResponse(id, "a long answer");
    first.savePartsSent(id, 1, { sentBefore: 0, parts: 9 });
    first.savePartsSent(id, 2, { sentBefore: 0, parts: 9 });
    assert.equal(first.getEvent(id)?.uncountedAttempts, 1, "once per attempt, not per part");
    first.markRetry(id, { error: "429", step: "delivery", nextAttemptAtMs: T0 + 1, nowMs: T0 + 1 });
    first.claimDue(T0 + 1, 1);
    first.savePartsSent(id, 2, { sentBefore: 2, parts: 9 });
    assert.equal(
      first.getEvent(id)?.uncountedAttempts,
      1,
      "saving what was out already is not progress",
    );
    first.savePartsSent(id, 3, { sentBefore: 2, parts: 9 });
    await first.close(); // a crash after part 3

    const second = openStateStore(home.dbPath, { backgroundCheckpoints: false });
    second.recoverInterrupted(T0 + 2);
    const event = second.getEvent(id)!;
    assert.equal(event.attempts - event.uncountedAttempts, 0, "neither attempt counts");
    assert.equal(event.partsSent, 3);
    await second.close();
  } finally {
    await home.cleanup();
  }
});

Deno.test("recoverInterrupted() of one event (a graceful stop) requeues it without counting the attempt", async () => {
  await withStore({}, async (store) => {
    const stopped = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
    const crashed = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
    store.claimDue(T0, 2);
    assert.equal(store.recoverInterrupted(T0 + 1, stopped), 1);
    assert.equal(store.getEvent(stopped)?.status, "queued");
    assert.equal(store.getEvent(stopped)?.uncountedAttempts, 1);
    assert.equal(store.getEvent(crashed)?.status, "running", "only that event");
    assert.equal(store.recoverInterrupted(T0 + 2), 1);
    assert.equal(store.getEvent(crashed)?.uncountedAttempts, 0, "a crash still counts");
  });
});

Deno.test("replay() starts a new attempt series for a failed event", async () => {
  await withStore({}, async (store) => {
    const id = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
    store.claimDue(T0, 1);
    store.saveResponse(id, "old answer");
    store.savePartsSent(id, 1, { sentBefore: 0, parts: 9 });
    store.markFailed(id, { error: "boom", step: "delivery", nowMs: T0 + 1 });
    const replayed = store.replay(id.slice(0, 12), T0 + 99);
    assert.equal(replayed.id, id);
    assert.equal(replayed.status, "queued");
    assert.equal(replayed.attempts, 0);
    assert.equal(replayed.response, null);
    assert.equal(replayed.partsSent, 0);
    assert.equal(replayed.lastError, null);
    assert.equal(replayed.nextAttemptAtMs, T0 + 99);
    assert.equal(store.claimDue(T0 + 99, 1)[0].attempts, 1);
    assert.equal(store.attempts(id).length, 2, "the first series stays in the history");
  });
});

Deno.test("replay() throws NotFoundError for an unknown id and ConflictError for a running event", async () => {
  await withStore({}, async (store) => {
    assert.throws(() => store.replay("evt_unknown", T0), NotFoundError);
    const id = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
    store.claimDue(T0, 1);
    assert.throws(() => store.replay(id, T0), ConflictError);
    assert.equal(store.getEvent(id)?.status, "running");
  });
});

Deno.test("getEvent() finds an event by a unique id prefix and refuses an ambiguous one", async () => {
  let next = 0;
  const ids = ["evt_aaa111", "evt_aaa222", "evt_bbb333"];
  await withStore({ newId: () => ids[next++] }, async (store) => {
    for (let i = 0; i < 3; i++) await store.accept(newEvent());
    assert.equal(store.getEvent("evt_bbb")?.id, "evt_bbb333");
    assert.equal(store.getEvent("evt_aaa222")?.id, "evt_aaa222");
    assert.equal(store.getEvent("evt_ccc"), null);
    assert.equal(store.getEvent(""), null);
    assert.throws(() => store.getEvent("evt_aaa"), (error: Error) => {
      assert.ok(error instanceof NotFoundError);
      assert.match(error.message, /ambiguous.*evt_aaa111, evt_aaa222/);
      return true;
    });
  });
});

Deno.test("listEvents() lists newest first, filters by subscription and status, 20 by default", async () => {
  await withStore({}, async (store) => {
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) {
      const subscription = i % 2 === 0 ? "even" : "odd";
      ids.push((await store.accept(newEvent({ subscription, receivedAtMs: T0 + i }))).eventId!);
    }
    const all = store.listEvents({});
    assert.equal(all.length, 20);
    assert.equal(all[0].id, ids[24]);
    assert.equal(store.listEvents({ limit: 100 }).length, 25);
    const odd = store.listEvents({ subscription: "odd", limit: 100 });
    assert.equal(odd.length, 12);
    assert.ok(odd.every((event) => event.subscription === "odd"));
    store.claimDue(T0 + 100, 3);
    assert.deepEqual(
      store.listEvents({ status: "running" }).map((event) => event.id),
      [ids[2], ids[1], ids[0]],
    );
    assert.equal(store.listEvents({ subscription: "even", status: "running" }).length, 2);
  });
});

Deno.test("prune() deletes old finished events with their keys, and keeps queued work", async () => {
  const day = 86_400_000;
  await withStore({ idempotencyTtlSeconds: 86_400 }, async (store) => {
    const oldDone = (await store.accept(newEvent({ deliveryId: "k1", receivedAtMs: T0 }))).eventId!;
    const oldQueued = (await store.accept(newEvent({ receivedAtMs: T0 + 1 }))).eventId!;
    store.claimDue(T0, 1);
    store.markDelivered(oldDone, T0 + 5);
    const fresh = (await store.accept(newEvent({ deliveryId: "k2", receivedAtMs: T0 + 9 * day })))
      .eventId!;
    store.claimDue(T0 + 9 * day, 5);
    store.markFailed(fresh, { error: "x", step: "agent", nowMs: T0 + 9 * day });

    const result = await store.prune(T0 + 10 * day - 1, { retentionDays: 7 });
    assert.deepEqual(result, { events: 1 });
    assert.equal(store.getEvent(oldDone), null);
    assert.deepEqual(store.attempts(oldDone), []);
    assert.ok(store.getEvent(oldQueued), "running work is kept");
    assert.ok(store.getEvent(fresh));
    assert.equal(store.keyHolder("gh", "k2", T0 + 9 * day + 1) !== null, true);
  });
});

Deno.test("prune() keeps an old event replayed within the retention window as long as a new one", async () => {
  const day = 86_400_000;
  await withStore({}, async (store) => {
    const old = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
    store.claimDue(T0, 1);
    store.markFailed(old, { error: "down", step: "agent", nowMs: T0 + 1 });
    store.replay(old, T0 + 9 * day); // the dead letter, replayed nine days later
    store.claimDue(T0 + 9 * day, 1);
    store.markDelivered(old, T0 + 9 * day + 1);
    assert.deepEqual(await store.prune(T0 + 10 * day, { retentionDays: 7 }), { events: 0 });
    assert.deepEqual(await store.prune(T0 + 17 * day, { retentionDays: 7 }), { events: 1 });
  });
});

Deno.test("a pruned payload is gone from the database file, not left in its free space", async () => {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath, { backgroundCheckpoints: false });
    const marker = "card-4242424242424242-of-a-customer";
    // 21 KB, as a real GitHub payload: most of it on overflow pages, which are freed whole.
    const payload = JSON.stringify({ note: marker.repeat(600) });
    const id = (await store.accept(newEvent({ payload, receivedAtMs: T0 }))).eventId!;
    store.claimDue(T0, 1);
    store.markDelivered(id, T0 + 1);
    assert.deepEqual(await store.prune(T0 + 8 * 86_400_000, { retentionDays: 7 }), { events: 1 });
    await store.close(); // checkpoints the WAL into the file
    const bytes = new TextDecoder("latin1").decode(await Deno.readFile(home.dbPath));
    assert.equal(bytes.includes(marker), false);
  } finally {
    await home.cleanup();
  }
});

Deno.test("prune() works in batches of maxRows, oldest first", async () => {
  const day = 86_400_000;
  await withStore({ idempotencyTtlSeconds: 60 }, async (store) => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const id = (await store.accept(newEvent({ deliveryId: `b${i}`, receivedAtMs: T0 + i })))
        .eventId!;
      ids.push(id);
    }
    for (const event of store.claimDue(T0 + 10, 5)) store.markDelivered(event.id, T0 + 10);
    const later = T0 + 8 * day;
    assert.deepEqual(await store.prune(later, { retentionDays: 7, maxRows: 2 }), { events: 2 });
    assert.equal(store.getEvent(ids[0]), null, "the oldest go first");
    assert.ok(store.getEvent(ids[2]));
    assert.deepEqual(await store.prune(later, { retentionDays: 7, maxRows: 2 }), { events: 2 });
    assert.deepEqual(await store.prune(later, { retentionDays: 7, maxRows: 2 }), { events: 1 });
    assert.deepEqual(await store.prune(later, { retentionDays: 7, maxRows: 2 }), { events: 0 });
  });
});

/** The tables of schema version 2 (2026-11-20), as a database written then has them. */
const SCHEMA_V2 = `
CREATE TABLE events (id TEXT NOT NULL UNIQUE, subscription TEXT NOT NULL,
  event_type TEXT NOT NULL, delivery_id TEXT NOT NULL, dedupe INTEGER NOT NULL,
  source TEXT NOT NULL, mode TEXT NOT NULL, payload TEXT NOT NULL, prompt TEXT NOT NULL,
  route TEXT NOT NULL, received_at INTEGER NOT NULL, status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER, response TEXT,
  parts_sent INTEGER NOT NULL DEFAULT 0, last_error TEXT, updated_at INTEGER NOT NULL);
CREATE INDEX events_due ON events(next_attempt_at) WHERE status = 'queued';
CREATE INDEX events_running ON events(status) WHERE status = 'running';
CREATE INDEX events_subscription ON events(subscription);
CREATE TABLE attempts (event_id TEXT NOT NULL, attempt INTEGER NOT NULL,
  started_at INTEGER NOT NULL, finished_at INTEGER, step TEXT NOT NULL, error TEXT);
CREATE INDEX attempts_event ON attempts(event_id);
CREATE INDEX events_received ON events(received_at);
CREATE TABLE idempotency_keys (subscription TEXT NOT NULL, delivery_id TEXT NOT NULL,
  event_id TEXT, expires_at INTEGER NOT NULL, PRIMARY KEY (subscription, delivery_id))
  WITHOUT ROWID;
CREATE INDEX keys_expiry ON idempotency_keys(expires_at);
PRAGMA user_version = 2;
`;

/** Version 1 had neither pruning index. */
const SCHEMA_V1 = SCHEMA_V2
  .replace("CREATE INDEX events_received ON events(received_at);", "")
  .replace("CREATE INDEX keys_expiry ON idempotency_keys(expires_at);", "")
  .replace("PRAGMA user_version = 2;", "PRAGMA user_version = 1;");

for (const [version, schema] of [[1, SCHEMA_V1], [2, SCHEMA_V2]] as const) {
  Deno.test(`opening a version ${version} database moves its idempotency keys onto their events`, () =>
    upgradeMovesKeys(schema));
}

async function upgradeMovesKeys(schema: string): Promise<void> {
  const home = await tempHome();
  await Deno.mkdir(home.dir + "/state");
  const old = new DatabaseSync(home.dbPath);
  old.exec(schema);
  const insert = old.prepare(
    "INSERT INTO events (id, subscription, event_type, delivery_id, dedupe, source, mode, " +
      "payload, prompt, route, received_at, status, updated_at) " +
      "VALUES (?, 'gh', 'issues.opened', ?, 1, 'github', 'agent', '{}', 'p', ?, ?, ?, ?)",
  );
  const route = JSON.stringify({ deliver: "log", skills: [] });
  insert.run("evt_live", "d-live", route, T0, "delivered", T0);
  insert.run("evt_expired", "d-expired", route, T0 - 2000, "queued", T0 - 2000);
  const key = old.prepare("INSERT INTO idempotency_keys VALUES ('gh', ?, ?, ?)");
  key.run("d-live", "evt_live", T0 + 60_000);
  key.run("d-expired", "evt_expired", T0 - 1000);
  key.run("d-pruned", "evt_gone", T0 + 60_000);
  old.close();

  const store = openStateStore(home.dbPath, { backgroundCheckpoints: false });
  try {
    assert.equal(store.getEvent("evt_live")?.status, "delivered", "events are kept");
    assert.equal(store.getEvent("evt_expired")?.status, "queued");
    assert.equal(store.keyHolder("gh", "d-live", T0) !== null, true);
    assert.equal(store.keyHolder("gh", "d-expired", T0) !== null, false);
    assert.equal(
      store.keyHolder("gh", "d-pruned", T0) !== null,
      false,
      "a key without its event is gone",
    );
    assert.deepEqual(
      await store.accept(newEvent({ deliveryId: "d-live", receivedAtMs: T0 })),
      { status: "duplicate", eventId: "evt_live" },
    );
    const again = await store.accept(newEvent({ deliveryId: "d-expired", receivedAtMs: T0 }));
    assert.equal(again.status, "accepted", "an expired key is taken over");
    assert.notEqual(again.eventId, "evt_expired");
  } finally {
    await store.close();
  }
  const check = new DatabaseSync(home.dbPath);
  const names = (check.prepare("SELECT name FROM sqlite_master").all() as { name: string }[])
    .map((row) => row.name);
  const { user_version } = check.prepare("PRAGMA user_version").get() as { user_version: number };
  check.close();
  await home.cleanup();
  assert.equal(user_version, 9);
  assert.ok(names.includes("events_key") && names.includes("events_finished"), String(names));
  assert.ok(!names.includes("events_received"), String(names));
  assert.ok(names.includes("events_direct_parts"), String(names));
  assert.ok(names.includes("events_failed_subscription"), String(names));
  assert.ok(!names.includes("idempotency_keys") && !names.includes("keys_expiry"), String(names));
}

Deno.test("opening a version 3 database adds the index of partly delivered direct messages", async () => {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath, { backgroundCheckpoints: false });
    const direct = newEvent({ mode: "direct", deliveryId: "dd" });
    await store.recordDirect(direct, {
      delivered: false,
      error: "502 on part 2",
      partsSent: 1,
    });
    await store.close();
    // As version 3 left it: the same tables, without the index.
    const old = new DatabaseSync(home.dbPath);
    old.exec(
      "DROP INDEX events_direct_parts; ALTER TABLE events DROP COLUMN uncounted_attempts; " +
        "PRAGMA user_version = 3;",
    );
    old.close();

    const upgraded = openStateStore(home.dbPath, { backgroundCheckpoints: false });
    try {
      assert.equal(upgraded.partsSentByFailedAttempts(direct), 1);
    } finally {
      await upgraded.close();
    }
    const check = new DatabaseSync(home.dbPath, { readOnly: true });
    const index = check.prepare(
      "SELECT 1 FROM sqlite_master WHERE name = 'events_direct_parts'",
    ).get();
    const { user_version } = check.prepare("PRAGMA user_version").get() as {
      user_version: number;
    };
    check.close();
    assert.ok(index, "the index was created");
    assert.equal(user_version, SCHEMA_VERSION);
  } finally {
    await home.cleanup();
  }
});

Deno.test("replay() of a direct message cut off mid-way keeps its parts sent only when sent the same way", async () => {
  await withStore({}, async (store) => {
    const route = { deliver: "telegram", chatId: "1", skills: [] };
    const event = newEvent({ mode: "direct", prompt: "long", route, receivedAtMs: T0 });
    const id = await store.recordDirect(event, { delivered: false, error: "502", partsSent: 2 });
    assert.equal(store.replay(id, T0 + 1).partsSent, 2, "the replay sends the rest");
    store.claimDue(T0 + 1, 1);
    store.markFailed(id, { error: "502 again", step: "delivery", nowMs: T0 + 2 });
    const edited = store.replay(id, T0 + 3, () => ({ mode: "direct", prompt: "edited", route }));
    assert.equal(edited.partsSent, 0, "another text starts from the first part");
    store.claimDue(T0 + 3, 1);
    store.savePartsSent(id, 2, { sentBefore: 0, parts: 9 });
    store.markFailed(id, { error: "502 again", step: "delivery", nowMs: T0 + 4 });
    const discord = { deliver: "discord", chatId: "1", skills: [] };
    const moved = store.replay(
      id,
      T0 + 5,
      () => ({ mode: "direct", prompt: "edited", route: discord }),
    );
    assert.equal(moved.partsSent, 0, "another target starts from the first part");
    store.claimDue(T0 + 5, 1);
    store.savePartsSent(id, 3, { sentBefore: 0, parts: 9 });
    store.markDelivered(id, T0 + 6);
    assert.equal(store.replay(id, T0 + 7).partsSent, 0, "a delivered message is sent whole again");
  });
});

Deno.test("markDelivered() of a replayed direct message takes its delivery id, so the sender's retry is a duplicate", async () => {
  await withStore({ idempotencyTtlSeconds: 60 }, async (store) => {
    const event = newEvent({ mode: "direct", deliveryId: "rp1", receivedAtMs: T0 });
    const id = await store.recordDirect(event, { delivered: false, error: "502", partsSent: 1 });
    assert.equal(store.keyHolder(event.subscription, "rp1", T0 + 1) !== null, false);
    store.replay(id, T0 + 1);
    store.claimDue(T0 + 1, 1);
    store.markDelivered(id, T0 + 2);
    assert.equal(store.keyHolder(event.subscription, "rp1", T0 + 3) !== null, true);
    assert.equal(
      store.keyHolder(event.subscription, "rp1", T0 + 2 + 60_000) !== null,
      false,
      "for the TTL",
    );
  });
});

Deno.test("markDelivered() leaves a delivery id's key with the event that holds it unexpired", async () => {
  let next = 0;
  const ids = () => `evt_${next++}`;
  await withStore({ idempotencyTtlSeconds: 60, newId: ids }, async (store, dbPath) => {
    const event = newEvent({ mode: "direct", deliveryId: "k", receivedAtMs: T0 });
    const failed = await store.recordDirect(event, {
      delivered: false,
      error: "502",
      partsSent: 0,
    });
    store.replay(failed, T0 + 1);
    store.claimDue(T0 + 1, 1);
    // The sender's retry is delivered while the replay runs, and takes the key over.
    const delivered = await store.recordDirect(event, { delivered: true, partsSent: 1 });
    store.markDelivered(failed, T0 + 2);
    const db = new DatabaseSync(dbPath, { readOnly: true });
    const holders = db.prepare("SELECT id FROM events WHERE key_expires_at IS NOT NULL").all();
    db.close();
    assert.deepEqual(holders.map((row) => row.id), [delivered]);
  });
});

/**
 * A database with one event (`id`, received at T0), made older by `downgrade` (SQL that drops
 * what a later version added and sets `user_version`), then opened again by `upgraded`; the
 * upgrade must end at the current version.
 */
async function withOlderDatabase(
  downgrade: string,
  body: (upgraded: StateStore, id: string) => void,
): Promise<void> {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath, { backgroundCheckpoints: false });
    const id = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
    await store.close();
    const old = new DatabaseSync(home.dbPath);
    old.exec(downgrade);
    old.close();
    const upgraded = openStateStore(home.dbPath, { backgroundCheckpoints: false });
    try {
      body(upgraded, id);
    } finally {
      await upgraded.close();
    }
    const check = new DatabaseSync(home.dbPath, { readOnly: true });
    const { user_version } = check.prepare("PRAGMA user_version").get() as {
      user_version: number;
    };
    check.close();
    assert.equal(user_version, SCHEMA_VERSION);
  } finally {
    await home.cleanup();
  }
}

Deno.test("opening a version 7 database adds the column of replay times, null for every event, set by a replay", async () => {
  await withOlderDatabase(
    "ALTER TABLE events DROP COLUMN replayed_at; PRAGMA user_version = 7;",
    (upgraded, id) => {
      assert.equal(upgraded.getEvent(id)?.replayedAtMs, null);
      upgraded.claimDue(T0, 1);
      upgraded.markFailed(id, { error: "down", step: "agent", nowMs: T0 + 1 });
      assert.equal(upgraded.replay(id, T0 + 5_000).replayedAtMs, T0 + 5_000);
    },
  );
});

Deno.test("opening a version 4 database adds the column of uncounted attempts, 0 for every event", async () => {
  // As version 4 left it: the same tables, without the column.
  await withOlderDatabase(
    "ALTER TABLE events DROP COLUMN uncounted_attempts; ALTER TABLE events DROP COLUMN " +
      "replayed_at; PRAGMA user_version = 4;",
    (upgraded, id) => {
      assert.equal(upgraded.getEvent(id)?.uncountedAttempts, 0);
      upgraded.claimDue(T0, 1);
      upgraded.savePartsSent(id, 1, { sentBefore: 0, parts: 9 });
      upgraded.markRetry(id, {
        error: "rate limited",
        step: "delivery",
        nextAttemptAtMs: T0 + 1,
        nowMs: T0,
      });
      assert.equal(upgraded.getEvent(id)?.uncountedAttempts, 1);
      assert.equal(upgraded.replay(id, T0 + 2).uncountedAttempts, 0, "a replay starts afresh");
    },
  );
});

Deno.test("replay() of a direct message takes its delivery id at once, so a retry while it waits is a duplicate", async () => {
  await withStore({ idempotencyTtlSeconds: 60 }, async (store) => {
    const event = newEvent({ mode: "direct", deliveryId: "waiting", receivedAtMs: T0 });
    const id = await store.recordDirect(event, { delivered: false, error: "502", partsSent: 0 });
    store.replay(id, T0 + 1);
    assert.equal(store.getEvent(id)?.status, "queued");
    assert.equal(store.keyHolder(event.subscription, "waiting", T0 + 2), id);
    assert.equal(store.keyHolder(event.subscription, "waiting", T0 + 2) !== null, true);
  });
});

Deno.test("a NUL in a prompt, an answer or an error no longer cuts what is read back there", async () => {
  await withStore({}, async (store) => {
    const prompt = "Title: harmless\u0000 (rest) -- never run shell commands. END";
    const { eventId } = await store.accept(newEvent({ receivedAtMs: T0, prompt }));
    const [claimed] = store.claimDue(T0, 1);
    assert.equal(claimed.prompt, prompt.replace("\u0000", "\uFFFD"));
    store.saveResponse(eventId!, "first\u0000second");
    store.markRetry(eventId!, {
      error: "bad\u0000chat id",
      step: "delivery",
      nextAttemptAtMs: T0 + 10,
      nowMs: T0,
    });
    const stored = store.getEvent(eventId!)!;
    assert.equal(stored.prompt, claimed.prompt);
    assert.equal(stored.response, "first\uFFFDsecond");
    assert.equal(stored.lastError, "bad\uFFFDchat id");
    assert.equal(store.attempts(eventId!)[0].error, "bad\uFFFDchat id");
    const replayed = store.replay(eventId!, T0 + 20, (event) => ({ ...event, prompt: "x\u0000y" }));
    assert.equal(replayed.prompt, "x\uFFFDy");
  });
});

Deno.test("pruning many events in a row does not grow the WAL past its size limit", async () => {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath);
    const payload = JSON.stringify({ body: "x".repeat(8000) });
    for (let i = 0; i < 8000; i += 200) {
      await Promise.all(Array.from({ length: 200 }, (_, k) =>
        store.recordDirect(
          newEvent({ mode: "direct", payload, receivedAtMs: T0 + i + k }),
          { delivered: true, partsSent: 1 },
        )));
    }
    const walBytes = () => Deno.statSync(`${home.dbPath}-wal`).size;
    let largest = 0;
    let pruned = 0;
    for (let events = -1; events !== 0;) {
      ({ events } = await store.prune(T0 + 30 * 86_400_000, { retentionDays: 7, maxRows: 250 }));
      pruned += events;
      largest = Math.max(largest, walBytes());
    }
    await store.close();
    assert.equal(pruned, 8000);
    // About 70 MB of rows deleted, and their pages zeroed (secure_delete): 166 MB of WAL when
    // the batches outran the checkpoints. The file is cut back to 64 MiB when the WAL starts
    // over (the inserts above left it larger), and each batch now starts it over.
    assert.ok(largest <= 68 * 1_048_576, `the WAL reached ${largest} bytes`);
  } finally {
    await home.cleanup();
  }
});
