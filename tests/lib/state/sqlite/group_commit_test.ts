/**
 * The SQLite backend's group commit: concurrent writes share a transaction, and a database that
 * refuses a batch (locked, full) refuses it to every write in it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { StoreUnavailableError } from "../../../../lib/errors.ts";
import { newEvent } from "../_fixtures.ts";
import { withStore } from "./_fixtures.ts";

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

Deno.test("accept() commits 1,000 concurrent events in a few transactions", async () => {
  await withStore({ maxBatch: 512 }, async (store) => {
    const results = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => store.accept(newEvent({ deliveryId: `d-${i}` }))),
    );
    assert.ok(results.every((result) => result.status === "accepted"));
    const { commits, operations } = store.stats();
    assert.equal(operations, 1000);
    assert.ok(commits <= 3, `expected at most 3 commits, got ${commits}`);
    assert.equal((await store.listEvents({ limit: 5000 })).length, 1000);
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
    assert.equal((await store.listEvents({})).length, 1, "the rejected event was not stored");
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
    assert.equal((await store.listEvents({ limit: 100 })).length, accepted);
  });
});
