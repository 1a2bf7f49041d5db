import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { StoreUnavailableError } from "../../../lib/errors.ts";
import { openStateStore } from "../../../lib/state/mod.ts";
import { STATEMENTS } from "../../../lib/state/sqlite/_database.ts";
import { newEvent, tempHome, withStore } from "./_fixtures.ts";
import { listingQuery } from "../../../lib/state/sqlite/_maintenance.ts";

Deno.test("accept() persists an event that is still there after close and reopen", async () => {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath);
    const event = newEvent({ route: { deliver: "telegram", chatId: "42", skills: ["a", "b"] } });
    const result = await store.accept(event);
    assert.equal(result.status, "accepted");
    await store.close();

    const reopened = openStateStore(home.dbPath);
    const stored = reopened.getEvent(result.eventId!);
    await reopened.close();
    assert.ok(stored);
    assert.equal(stored.status, "queued");
    assert.equal(stored.attempts, 0);
    assert.equal(stored.nextAttemptAtMs, event.receivedAtMs);
    assert.deepEqual(stored.route, event.route);
    assert.equal(stored.payload, event.payload);
    assert.equal(stored.prompt, event.prompt);
    assert.equal(stored.dedupe, true);
    assert.equal(stored.source, "github");
  } finally {
    await home.cleanup();
  }
});

Deno.test("openStateStore() creates the state folder with mode 0700", async () => {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath);
    await store.close();
    const info = await Deno.stat(join(home.dir, "state"));
    assert.equal(info.mode! & 0o777, 0o700);
  } finally {
    await home.cleanup();
  }
});

Deno.test("accept() makes event ids of 20 characters that sort in acceptance order", async () => {
  await withStore({}, async (store) => {
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) {
      const result = await store.accept(newEvent());
      assert.equal(result.status, "accepted");
      ids.push(result.eventId!);
    }
    assert.ok(ids.every((id) => /^evt_[0-9a-z]{16}$/.test(id)), ids[0]);
    assert.deepEqual([...ids].sort(), ids);
  });
});

Deno.test("accept() answers duplicate with the first event id for a delivery id seen before", async () => {
  await withStore({}, async (store) => {
    const first = await store.accept(newEvent({ deliveryId: "d-1" }));
    const again = await store.accept(
      newEvent({ deliveryId: "d-1", receivedAtMs: 1_700_000_001_000 }),
    );
    assert.equal(first.status, "accepted");
    assert.deepEqual(again, { status: "duplicate", eventId: first.eventId });
    assert.equal(store.listEvents({}).length, 1);
  });
});

Deno.test("accept() scopes delivery ids per subscription", async () => {
  await withStore({}, async (store) => {
    const a = await store.accept(newEvent({ subscription: "a", deliveryId: "same" }));
    const b = await store.accept(newEvent({ subscription: "b", deliveryId: "same" }));
    assert.equal(a.status, "accepted");
    assert.equal(b.status, "accepted");
    // Both stored, each under its subscription: an accepted event that was not inserted
    // would be a 202 for an event that is lost.
    assert.equal(store.getEvent(a.eventId)?.subscription, "a");
    assert.equal(store.getEvent(b.eventId)?.subscription, "b");
    assert.equal(store.listEvents({}).length, 2);
  });
});

Deno.test("accept() catches two copies of one delivery id inside the same batch", async () => {
  await withStore({}, async (store) => {
    const results = await Promise.all([
      store.accept(newEvent({ deliveryId: "twin" })),
      store.accept(newEvent({ deliveryId: "twin" })),
    ]);
    assert.equal(store.stats().commits, 1);
    assert.equal(results[0].status, "accepted");
    assert.deepEqual(results[1], { status: "duplicate", eventId: results[0].eventId });
  });
});

Deno.test("accept() accepts a delivery id again once its key is older than the TTL", async () => {
  await withStore({ idempotencyTtlSeconds: 60 }, async (store) => {
    const t0 = 1_700_000_000_000;
    await store.accept(newEvent({ deliveryId: "d", receivedAtMs: t0 }));
    const inside = await store.accept(newEvent({ deliveryId: "d", receivedAtMs: t0 + 59_999 }));
    const after = await store.accept(newEvent({ deliveryId: "d", receivedAtMs: t0 + 60_000 }));
    assert.equal(inside.status, "duplicate");
    assert.equal(after.status, "accepted");
    const later = await store.accept(newEvent({ deliveryId: "d", receivedAtMs: t0 + 61_000 }));
    assert.deepEqual(later, { status: "duplicate", eventId: after.eventId });
  });
});

Deno.test("accept() never deduplicates events whose delivery id was generated", async () => {
  await withStore({}, async (store) => {
    const one = await store.accept(newEvent({ deliveryId: "gen", dedupe: false }));
    const two = await store.accept(newEvent({ deliveryId: "gen", dedupe: false }));
    assert.equal(one.status, "accepted");
    assert.equal(two.status, "accepted");
    assert.equal(store.keyHolder("gh", "gen", 1_700_000_000_000) !== null, false);
  });
});

Deno.test("accept() commits 1,000 concurrent events in a few transactions", async () => {
  await withStore({ maxBatch: 512 }, async (store) => {
    const results = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => store.accept(newEvent({ deliveryId: `d-${i}` }))),
    );
    assert.ok(results.every((result) => result.status === "accepted"));
    const { commits, operations } = store.stats();
    assert.equal(operations, 1000);
    assert.ok(commits <= 3, `expected at most 3 commits, got ${commits}`);
    assert.equal(store.listEvents({ limit: 5000 }).length, 1000);
  });
});

Deno.test("accept() rejects with StoreUnavailableError while another connection holds the write lock", async () => {
  await withStore({ busyTimeoutMs: 300 }, async (store, dbPath) => {
    const other = new DatabaseSync(dbPath);
    other.exec("BEGIN IMMEDIATE");
    const started = performance.now();
    await assert.rejects(store.accept(newEvent()), StoreUnavailableError);
    assert.ok(performance.now() - started < 2000, "accept must give up after busyTimeoutMs");
    // For as long again, a batch is refused at once, without waiting on the lock.
    const refusedAt = performance.now();
    await assert.rejects(store.accept(newEvent()), /refused a moment ago; not tried again yet/);
    assert.ok(performance.now() - refusedAt < 150, "refused without waiting the busy timeout");
    other.exec("ROLLBACK");
    other.close();
    await new Promise((resolve) => setTimeout(resolve, 350));
    assert.equal((await store.accept(newEvent())).status, "accepted");
    assert.equal(store.listEvents({}).length, 1, "the rejected event was not stored");
  });
});

Deno.test("accept() rejects with StoreUnavailableError when the database is full", async () => {
  await withStore({ maxDatabaseBytes: 256 * 1024 }, async (store) => {
    const big = JSON.stringify({ blob: "x".repeat(64 * 1024) });
    const outcomes = await Promise.allSettled(
      Array.from({ length: 8 }, () => store.accept(newEvent({ payload: big }))),
    );
    const rejected = outcomes.filter((outcome) => outcome.status === "rejected");
    assert.ok(rejected.length > 0, "some batch must fail");
    for (const outcome of rejected) {
      assert.ok(outcome.reason instanceof StoreUnavailableError, String(outcome.reason));
    }
    const accepted = outcomes.filter((outcome) => outcome.status === "fulfilled").length;
    assert.equal(store.listEvents({ limit: 100 }).length, accepted);
  });
});

Deno.test("accept() rejects with StoreUnavailableError once the store is closed", async () => {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath);
    await store.close();
    await assert.rejects(store.accept(newEvent()), StoreUnavailableError);
    assert.throws(() => store.claimDue(Date.now(), 1), StoreUnavailableError);
  } finally {
    await home.cleanup();
  }
});

Deno.test("accept() rejects with StoreUnavailableError once the database file is deleted or replaced", async () => {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath);
    await store.accept(newEvent());
    await Deno.remove(home.dbPath);
    await assert.rejects(store.accept(newEvent()), /gateway\.db was deleted or replaced/);
    await store.close();

    const again = openStateStore(home.dbPath);
    await again.accept(newEvent());
    const backup = `${home.dbPath}.backup`;
    await Deno.copyFile(home.dbPath, backup);
    await Deno.rename(backup, home.dbPath);
    await assert.rejects(again.accept(newEvent()), StoreUnavailableError);
    await again.close();

    const third = openStateStore(home.dbPath);
    await third.accept(newEvent());
    await Deno.remove(`${home.dbPath}-wal`);
    await assert.rejects(third.accept(newEvent()), /gateway\.db-wal was deleted or replaced/);
    await third.close();

    const fresh = openStateStore(home.dbPath); // its log deleted before anything was written
    await Deno.remove(`${home.dbPath}-wal`);
    await assert.rejects(fresh.accept(newEvent()), /gateway\.db-wal was deleted or replaced/);
    await fresh.close();
  } finally {
    await home.cleanup();
  }
});

Deno.test("close() commits the batch that is still pending", async () => {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath);
    const pending = store.accept(newEvent({ deliveryId: "last" }));
    await store.close();
    const result = await pending;
    assert.equal(result.status, "accepted");
    const reopened = openStateStore(home.dbPath);
    assert.ok(reopened.getEvent(result.eventId!));
    await reopened.close();
  } finally {
    await home.cleanup();
  }
});

Deno.test({
  name: "openStateStore() throws StoreUnavailableError when the state folder is read-only",
  // root ignores file modes, so the folder cannot be made read-only for it.
  ignore: Deno.uid() === 0,
  fn: async () => {
    const home = await tempHome();
    try {
      await Deno.chmod(home.dir, 0o500);
      assert.throws(() => openStateStore(home.dbPath), StoreUnavailableError);
    } finally {
      await Deno.chmod(home.dir, 0o700);
      await home.cleanup();
    }
  },
});

Deno.test("keyHolder() and recordDirect() leave a failed direct delivery retryable", async () => {
  const now = 1_700_000_000_000;
  await withStore({ now: () => now, idempotencyTtlSeconds: 60 }, async (store) => {
    const event = newEvent({ mode: "direct", deliveryId: "dd", receivedAtMs: now });
    assert.equal(store.keyHolder("gh", "dd", now) !== null, false);
    const failedId = await store.recordDirect(event, {
      delivered: false,
      error: "502",
      partsSent: 0,
    });
    assert.equal(store.keyHolder("gh", "dd", now) !== null, false);
    const deliveredId = await store.recordDirect(event, { delivered: true, partsSent: 1 });
    assert.equal(store.keyHolder("gh", "dd", now) !== null, true);
    assert.equal(store.keyHolder("other", "dd", now) !== null, false);
    assert.equal(
      store.keyHolder("gh", "dd", now + 60_000) !== null,
      false,
      "expired after the TTL",
    );
    assert.equal(store.getEvent(failedId)?.status, "failed");
    assert.equal(store.getEvent(failedId)?.lastError, "502");
    assert.equal(store.getEvent(deliveredId)?.status, "delivered");
    assert.equal(store.getEvent(deliveredId)?.partsSent, 1);
    assert.deepEqual(store.attempts(failedId).map((a) => [a.step, a.error]), [["delivery", "502"]]);
  });
});

Deno.test("recordDirectProgress() puts a direct message's parts on record as it goes; recordDirect() then records its outcome on the same event", async () => {
  const T0 = 1_700_000_000_000;
  await withStore({ idempotencyTtlSeconds: 60, now: () => T0 + 5 }, async (store) => {
    const event = newEvent({ mode: "direct", deliveryId: "long", receivedAtMs: T0 });
    const id = await store.recordDirectProgress(event, 1);
    assert.equal(await store.recordDirectProgress(event, 2, id), id);
    assert.equal(store.partsSentByFailedAttempts({ ...event, receivedAtMs: T0 + 1 }), 2);
    assert.equal(store.keyHolder("gh", "long", T0 + 1), null, "the sender's retry goes through");
    assert.match(store.getEvent(id)!.lastError ?? "", /interrupted: the gateway stopped/);

    assert.equal(
      await store.recordDirect(event, { delivered: true, partsSent: 3, progressId: id }),
      id,
    );
    const done = store.getEvent(id)!;
    assert.deepEqual([done.status, done.partsSent, done.lastError], ["delivered", 3, null]);
    assert.equal(store.keyHolder("gh", "long", T0 + 6), id);
    assert.deepEqual(store.attempts(id).map((a) => [a.finishedAtMs, a.error]), [[T0 + 5, null]]);
    assert.equal(store.listEvents({}).length, 1, "one event, not two");

    // Replayed while it was being sent: the outcome is recorded on its own.
    const other = newEvent({ mode: "direct", deliveryId: "other", receivedAtMs: T0 });
    const progress = await store.recordDirectProgress(other, 1);
    store.replay(progress, T0 + 2);
    const outcome = await store.recordDirect(other, {
      delivered: false,
      error: "502",
      partsSent: 1,
      progressId: progress,
    });
    assert.notEqual(outcome, progress);
    assert.equal(store.getEvent(progress)!.status, "queued", "the replay's, untouched");
  });
});

Deno.test("partsSentByFailedAttempts() counts the parts failed direct attempts of the same message delivered", async () => {
  const T0 = 1_700_000_000_000;
  await withStore({ idempotencyTtlSeconds: 60 }, async (store, dbPath) => {
    const event = newEvent({
      mode: "direct",
      deliveryId: "dd",
      prompt: "a long message",
      route: { deliver: "telegram", chatId: "1", skills: [] },
      receivedAtMs: T0,
    });
    const retry = { ...event, receivedAtMs: T0 + 30_000 };
    assert.equal(store.partsSentByFailedAttempts(retry), 0, "never tried");
    await store.recordDirect(event, { delivered: false, error: "502", partsSent: 0 });
    assert.equal(store.partsSentByFailedAttempts(retry), 0, "nothing went out");
    await store.recordDirect(event, { delivered: false, error: "502 on part 2", partsSent: 1 });
    await store.recordDirect(event, { delivered: false, error: "502 on part 3", partsSent: 2 });
    assert.equal(store.partsSentByFailedAttempts(retry), 2);
    assert.equal(
      store.partsSentByFailedAttempts({ ...retry, prompt: "an edited message" }),
      0,
      "text",
    );
    const discord = { deliver: "discord", chatId: "1", skills: [] };
    assert.equal(
      store.partsSentByFailedAttempts({ ...retry, route: discord }),
      0,
      "another target",
    );
    const chat2 = { deliver: "telegram", chatId: "2", skills: [] };
    assert.equal(store.partsSentByFailedAttempts({ ...retry, route: chat2 }), 0, "another chat");
    assert.equal(
      store.partsSentByFailedAttempts({ ...retry, subscription: "other" }),
      0,
      "subscription",
    );
    assert.equal(
      store.partsSentByFailedAttempts({ ...retry, deliveryId: "other" }),
      0,
      "delivery id",
    );
    assert.equal(
      store.partsSentByFailedAttempts({ ...retry, receivedAtMs: T0 + 60_000 }),
      0,
      "the delivery id has expired: a new message",
    );

    const check = new DatabaseSync(dbPath, { readOnly: true });
    const plan = check.prepare(`EXPLAIN QUERY PLAN ${STATEMENTS.partsSentByFailedAttempts}`)
      .all("gh", "dd", "x", "{}", 0) as { detail: string }[];
    check.close();
    assert.match(plan.map((row) => row.detail).join("; "), /events_direct_parts/);
  });
});

Deno.test("accept() resolves only for committed events: all of them survive kill -9", async () => {
  const home = await tempHome();
  const storeModule = new URL("../../../lib/state/mod.ts", import.meta.url).href;
  const script = `
    import { openStateStore } from ${JSON.stringify(storeModule)};
    const store = openStateStore(Deno.args[0]);
    for (let round = 0; round < 20; round++) {
      const results = await Promise.all(Array.from({ length: 25 }, (_, i) =>
        store.accept({ subscription: "gh", eventLabel: "push", deliveryId: round + "-" + i,
          dedupe: true, source: "github", mode: "agent", payload: "{}", prompt: "p",
          route: { deliver: "log", skills: [] }, receivedAtMs: Date.now() })));
      for (const result of results) console.log(result.eventId);
    }
    console.log("done");
    await new Promise(() => {}); // killed while the store is still open
  `;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", script, home.dbPath],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const lines: string[] = [];
    let buffer = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buffer += chunk;
      lines.push(...buffer.split("\n").slice(0, -1));
      buffer = buffer.slice(buffer.lastIndexOf("\n") + 1);
      if (lines.includes("done")) break;
    }
    child.kill("SIGKILL");
    await child.status;
    const ids = lines.filter((line) => line.startsWith("evt_"));
    assert.equal(ids.length, 500);
    const store = openStateStore(home.dbPath);
    try {
      const missing = ids.filter((id) => store.getEvent(id)?.status !== "queued");
      assert.deepEqual(missing, []);
    } finally {
      await store.close();
    }
  } finally {
    await home.cleanup();
  }
});

Deno.test("listing the failed events, of all or of one subscription, reads an index of dead letters", async () => {
  await withStore({}, (_store, dbPath) => {
    const check = new DatabaseSync(dbPath, { readOnly: true });
    const plan = (where: string, ...params: (string | number)[]) =>
      (check.prepare(
        `EXPLAIN QUERY PLAN SELECT * FROM events WHERE ${where} ORDER BY rowid DESC LIMIT ?`,
      ).all(...params, 20) as { detail: string }[]).map((row) => row.detail).join("; ");
    const all = plan("status = ?", "failed");
    const byName = plan("subscription = ? AND status = ?", "gh", "failed");
    check.close();
    assert.match(all, /USING INDEX events_failed \(/);
    assert.match(byName, /USING INDEX events_failed_subscription /);
    for (const details of [all, byName]) assert.doesNotMatch(details, /TEMP B-TREE/);
    return Promise.resolve();
  });
});

Deno.test("listing the queued events reads their index, not every event", async () => {
  await withStore({}, async (store) => {
    for (let i = 0; i < 3000; i++) {
      const event = newEvent({ mode: "direct", receivedAtMs: 1000 + i });
      if (i % 1000 === 0) await store.accept({ ...event, mode: "agent" });
      else await store.recordDirect(event, { delivered: true, partsSent: 1 });
    }
    const queued = store.listEvents({ status: "queued" });
    assert.deepEqual(queued.map((event) => event.receivedAtMs), [3000, 2000, 1000]);
    assert.deepEqual(store.listEvents({ status: "queued", subscription: "gh" }).length, 3);
  });
});

Deno.test("listing the queued events sorts the rowids of the queued alone, not whole rows", async () => {
  await withStore({}, (_store, dbPath) => {
    const check = new DatabaseSync(dbPath, { readOnly: true });
    for (
      const filter of [{ status: "queued" as const }, {
        status: "queued" as const,
        subscription: "gh",
      }]
    ) {
      const { sql, params } = listingQuery(filter);
      const plan = (check.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as {
        detail: string;
      }[]).map((row) => row.detail).join("; ");
      assert.match(plan, /SCAN events USING (COVERING )?INDEX events_due/);
      assert.match(plan, /SEARCH events USING INTEGER PRIMARY KEY \(rowid=\?\)/);
    }
    check.close();
    return Promise.resolve();
  });
});

Deno.test("openStateStore() refuses an emptied database file beside a log of writes, and keeps the log", async () => {
  const h = await tempHome();
  const path = h.dbPath;
  // The events of a gateway killed before its checkpoint live in the -wal file: copy it aside
  // while the store is open, as a kill -9 leaves it.
  const store = openStateStore(path, { backgroundCheckpoints: false });
  for (let i = 0; i < 5; i++) await store.accept(newEvent({ deliveryId: `kept-${i}` }));
  const log = await Deno.readFile(`${path}-wal`);
  await store.close();
  assert.ok(log.length > 0);
  await Deno.writeFile(`${path}-wal`, log);
  await Deno.writeFile(path, new Uint8Array()); // emptied by accident
  assert.throws(
    () => openStateStore(path),
    (error: Error) =>
      error instanceof StoreUnavailableError &&
      error.message.includes(`${path}: it is empty, but ${path}-wal beside it holds`),
  );
  assert.deepEqual(await Deno.readFile(`${path}-wal`), log, "the log is left as it was");
  assert.equal((await Deno.stat(path)).size, 0);
  await h.cleanup();
});
