import assert from "node:assert/strict";
import { StoreUnavailableError } from "../../../lib/errors.ts";
import type { NewEvent } from "../../../lib/state/mod.ts";
import { openStateStore } from "../../../lib/state/sqlite/mod.ts";
import type { DeliveryJob } from "../../../lib/targets/mod.ts";
import { deliverNow } from "../../../server/ingest/_direct.ts";
import { createHeldDirectRecords } from "../../../server/ingest/_held_direct.ts";
import type { IngestDeps } from "../../../server/ingest/mod.ts";

const T0 = 1_700_000_000_000;

function direct(deliveryId: string): NewEvent {
  return {
    subscription: "ci",
    eventLabel: "deploy",
    deliveryId,
    dedupe: true,
    source: "other",
    mode: "direct",
    payload: "{}",
    prompt: "deployed",
    route: { deliver: "telegram", chatId: "42", skills: [] },
    receivedAtMs: T0,
  };
}

Deno.test("a direct message delivered while the store refuses its record: the retry is a duplicate, and the record is written once the store takes it", async () => {
  const store = openStateStore(":memory:", { now: () => T0 });
  const timers: (() => void)[] = [];
  const held = createHeldDirectRecords(store, {
    retryMs: 5000,
    ttlMs: 3_600_000,
    setTimer: (callback) => (timers.push(callback), () => {}),
  });
  const recordDirect = store.recordDirect;
  let locked = true;
  store.recordDirect = (...args) =>
    locked
      ? Promise.reject(new StoreUnavailableError("State database error: database is locked"))
      : recordDirect(...args);
  const sent: DeliveryJob[] = [];
  const deps = {
    store,
    heldDirect: held,
    now: () => T0,
    deliverDirect: (job: DeliveryJob) => {
      sent.push(job);
      return Promise.resolve({ target: "telegram", parts: 1, destination: "chat 42" });
    },
  } as unknown as IngestDeps;
  try {
    const first = await deliverNow(direct("d-locked"), {}, deps, new Set());
    assert.equal(first.status, 200, "delivered: the sender must not send it again");
    assert.equal(store.listEvents({}).length, 0, "not recorded yet");

    const retry = await deliverNow(direct("d-locked"), {}, deps, new Set());
    assert.equal(retry.status, 200);
    assert.equal((await retry.json()).status, "duplicate");
    assert.equal(sent.length, 1, "sent once");

    locked = false;
    assert.equal(timers.length, 1, "a retry of the write is scheduled");
    timers[0]();
    await held.flush();
    const [recorded] = store.listEvents({});
    assert.equal(recorded?.status, "delivered");
    assert.equal(held.delivered("ci", "d-locked", T0), false, "no longer held");
    const later = await deliverNow(direct("d-locked"), {}, deps, new Set());
    assert.equal((await later.json()).status, "duplicate", "now from the store");
    assert.equal(sent.length, 1);
  } finally {
    held.stop();
    await store.close();
  }
});

Deno.test("held records are written in order, and those still refused stay held", async () => {
  const written: string[] = [];
  let refuse = new Set(["b"]);
  const held = createHeldDirectRecords({
    recordDirect: (event) => {
      if (refuse.has(event.deliveryId)) return Promise.reject(new StoreUnavailableError("locked"));
      written.push(event.deliveryId);
      return Promise.resolve(event.deliveryId);
    },
  }, { retryMs: 5000, ttlMs: 60_000, setTimer: () => () => {} });
  held.hold(direct("a"), { delivered: true, partsSent: 1 }, T0);
  held.hold(direct("b"), { delivered: true, partsSent: 1 }, T0);
  held.hold(direct("c"), { delivered: false, error: "502", partsSent: 0 }, T0);
  assert.equal(await held.flush(), 2, "b refused, so c waits behind it");
  assert.deepEqual(written, ["a"]);
  assert.equal(held.delivered("ci", "b", T0 + 59_999), true);
  assert.equal(held.delivered("ci", "b", T0 + 60_000), false, "not past the idempotency window");
  assert.equal(held.delivered("ci", "c", T0), false, "a failed delivery is not a duplicate");
  refuse = new Set();
  assert.equal(await held.flush(), 0);
  assert.deepEqual(written, ["a", "b", "c"]);
  held.stop();
});

Deno.test("a record held while a flush writes an older one of the same delivery id is kept and written", async () => {
  const written: string[] = [];
  let release!: () => void;
  const slow = new Promise<void>((resolve) => (release = resolve));
  const held = createHeldDirectRecords({
    recordDirect: async (event, outcome) => {
      if (!outcome.delivered) await slow; // the failed attempt's record is being written
      written.push(outcome.delivered ? "delivered" : "failed");
      return event.deliveryId;
    },
  }, { retryMs: 5000, ttlMs: 60_000, setTimer: () => () => {} });
  held.hold(direct("x"), { delivered: false, error: "502", partsSent: 0 }, T0);
  const flushing = held.flush();
  held.hold(direct("x"), { delivered: true, partsSent: 1 }, T0 + 10); // the sender's retry
  release();
  assert.equal(await flushing, 0, "the newer one written in the same flush");
  assert.deepEqual(written, ["failed", "delivered"]);
});

Deno.test("a record is written with the time of its delivery, and no timer starts after stop()", async () => {
  const times: (number | undefined)[] = [];
  let timers = 0;
  const held = createHeldDirectRecords({
    recordDirect: (event, outcome) => {
      times.push(outcome.atMs);
      return Promise.resolve(event.deliveryId);
    },
  }, { retryMs: 5000, ttlMs: 60_000, setTimer: () => (timers++, () => {}) });
  held.hold(direct("y"), { delivered: true, partsSent: 1 }, T0 + 7);
  assert.equal(await held.flush(), 0);
  assert.deepEqual(times, [T0 + 7]);
  held.stop();
  const before = timers;
  held.hold(direct("z"), { delivered: true, partsSent: 1 }, T0 + 8);
  assert.equal(timers, before, "nothing retries a store that is closing");
});
