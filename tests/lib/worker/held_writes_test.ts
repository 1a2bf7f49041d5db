/**
 * Direct deliveries whose record the state store refuses: the message went out, so its sender
 * got its answer; the record is held by the worker, with its outcomes, and written once the
 * store takes writes again. Meanwhile a retry of a delivered message is a duplicate.
 */
import assert from "node:assert/strict";
import { StoreUnavailableError, TargetError } from "../../../lib/errors.ts";
import type { DirectOutcome, NewEvent } from "../../../lib/state/mod.ts";
import { openStateStore } from "../../../lib/state/sqlite/mod.ts";
import type { DeliveryJob, SentPart } from "../../../lib/targets/mod.ts";
import type { DeliverFn } from "../../../lib/worker/mod.ts";
import { directWorker } from "../../fakes/direct_worker.ts";

const T0 = 1_700_000_000_000;
/** A part as a fake delivery reports it sent. */
const SENT: SentPart = { target: "telegram", destination: "chat 42", messageId: "7" };

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

const LOCKED = () =>
  Promise.reject(new StoreUnavailableError("State database error: database is locked"));

/** A delivery that records what it sent, and fails the delivery ids in `failing`. */
function sender(sent: DeliveryJob[], failing = new Set<string>()): DeliverFn {
  return (job) => {
    if (failing.has(job.deliveryId)) return Promise.reject(new TargetError("502"));
    sent.push(job);
    return Promise.resolve({ target: "telegram", parts: 1, destination: "chat 42" });
  };
}

Deno.test("a direct message delivered while the store refuses its record: the retry is a duplicate, and the record is written once the store takes it", async () => {
  const store = openStateStore(":memory:", { now: () => T0 });
  // The worker's timers, each until it runs or is cancelled.
  const timers = new Set<() => void>();
  const recordDirect = store.recordDirect;
  let locked = true;
  store.recordDirect = (...args) => locked ? LOCKED() : recordDirect(...args);
  const sent: DeliveryJob[] = [];
  const worker = directWorker(store, sender(sent), {
    now: () => T0,
    setTimer: (callback) => {
      const timer = () => (timers.delete(timer), callback());
      timers.add(timer);
      return () => timers.delete(timer);
    },
  });
  worker.start();
  try {
    const first = await worker.deliverNow(direct("d-locked"), {});
    assert.deepEqual(first.status, "delivered", "delivered: the sender must not send it again");
    assert.equal((await store.listEvents({})).length, 0, "not recorded yet");

    const retry = await worker.deliverNow(direct("d-locked"), {});
    assert.equal(retry.status, "duplicate");
    assert.equal(sent.length, 1, "sent once");

    locked = false;
    assert.equal(timers.size, 1, "a retry of the write is scheduled");
    [...timers][0]();
    assert.equal(await worker.flushHeld(), 0);
    const [recorded] = await store.listEvents({});
    assert.equal(recorded?.status, "delivered");
    const later = await worker.deliverNow(direct("d-locked"), {});
    assert.equal(later.status, "duplicate", "now from the store");
    assert.equal(sent.length, 1);
  } finally {
    await worker.stop({ deadlineMs: 0 });
    await store.close();
  }
});

Deno.test("held records are all written once the store takes them; a delivered one is a duplicate only within the idempotency window", async () => {
  const store = openStateStore(":memory:", { now: () => T0 });
  const written: string[] = [];
  let refuse = new Set(["a", "b", "c"]);
  store.recordDirect = (event: NewEvent, _outcome: DirectOutcome) => {
    if (refuse.has(event.deliveryId)) return LOCKED();
    written.push(event.deliveryId);
    return Promise.resolve(event.deliveryId);
  };
  const clock = { now: T0 };
  const sent: DeliveryJob[] = [];
  const worker = directWorker(store, sender(sent, new Set(["c"])), {
    now: () => clock.now,
    setTimer: () => () => {},
    idempotencyTtlSeconds: 60,
  });
  try {
    for (const id of ["a", "b", "c"]) await worker.deliverNow(direct(id), {});
    refuse = new Set(["b"]);
    assert.equal(await worker.flushHeld(), 2, "b refused, so c waits behind it");
    assert.deepEqual(written, ["a"]);
    const at = (ms: number, id: string) => ({ ...direct(id), receivedAtMs: T0 + ms });
    assert.equal((await worker.deliverNow(at(59_999, "b"), {})).status, "duplicate");
    assert.equal(sent.length, 2, "a and b");
    assert.equal(
      (await worker.deliverNow(at(60_000, "b"), {})).status,
      "delivered",
      "not past the idempotency window",
    );
    assert.equal(
      (await worker.deliverNow(at(0, "c"), {})).status,
      "failed",
      "a failed delivery is not a duplicate: sent again",
    );
    refuse = new Set();
    assert.equal(await worker.flushHeld(), 0);
    assert.deepEqual([...new Set(written)].sort(), ["a", "b", "c"]);
  } finally {
    await store.close();
  }
});

Deno.test("a record held while a flush writes an older one of the same delivery id is kept and written", async () => {
  const store = openStateStore(":memory:", { now: () => T0 });
  const written: string[] = [];
  let locked = true;
  let release!: () => void;
  const slow = new Promise<void>((resolve) => (release = resolve));
  store.recordDirect = async (event: NewEvent, outcome: DirectOutcome) => {
    if (locked) return LOCKED();
    if (!outcome.delivered) await slow; // the failed attempt's record is being written
    written.push(outcome.delivered ? "delivered" : "failed");
    return event.deliveryId;
  };
  const failing = new Set(["x"]);
  const worker = directWorker(store, sender([], failing), { setTimer: () => () => {} });
  try {
    assert.equal((await worker.deliverNow(direct("x"), {})).status, "failed");
    locked = false;
    const flushing = worker.flushHeld();
    // The sender's retry is delivered while the store refuses its record too.
    failing.clear();
    locked = true;
    const retry = worker.deliverNow({ ...direct("x"), receivedAtMs: T0 + 10 }, {});
    assert.equal((await retry).status, "delivered");
    locked = false;
    release();
    assert.equal(await flushing, 0, "the newer one written in the same flush");
    assert.deepEqual(written, ["failed", "delivered"]);
  } finally {
    await store.close();
  }
});

Deno.test("a record is written with the time of its delivery, and no timer starts after stop()", async () => {
  const store = openStateStore(":memory:", { now: () => T0 });
  const times: (number | undefined)[] = [];
  let locked = true;
  store.recordDirect = (event: NewEvent, outcome: DirectOutcome) => {
    if (locked) return LOCKED();
    times.push(outcome.atMs);
    return Promise.resolve(event.deliveryId);
  };
  const clock = { now: T0 + 7 };
  let timers = 0;
  const worker = directWorker(store, sender([]), {
    now: () => clock.now,
    setTimer: () => (timers++, () => {}),
  });
  try {
    await worker.deliverNow(direct("y"), {});
    clock.now = T0 + 5000;
    locked = false;
    assert.equal(await worker.flushHeld(), 0);
    assert.deepEqual(times, [T0 + 7]);
    await worker.stop({ deadlineMs: 0 });
    const before = timers;
    locked = true;
    await worker.deliverNow(direct("z"), {});
    assert.equal(timers, before, "nothing retries a store that is closing");
  } finally {
    await store.close();
  }
});

Deno.test("a held direct record whose write fails with an unexpected error stays held, a duplicate meanwhile", async () => {
  const store = openStateStore(":memory:", { now: () => T0 });
  const recordDirect = store.recordDirect;
  let failure: Error | undefined = new Error("disk I/O error");
  store.recordDirect = (...args) => failure ? Promise.reject(failure) : recordDirect(...args);
  const sent: DeliveryJob[] = [];
  const worker = directWorker(store, sender(sent), { now: () => T0, setTimer: () => () => {} });
  try {
    assert.equal((await worker.deliverNow(direct("io"), {})).status, "delivered");
    assert.equal(await worker.flushHeld(), 1, "tried again, and still held");
    assert.equal((await worker.deliverNow(direct("io"), {})).status, "duplicate");
    assert.equal(sent.length, 1);
    failure = undefined;
    assert.equal(await worker.flushHeld(), 0);
    assert.equal((await store.listEvents({}))[0]?.status, "delivered");
  } finally {
    await store.close();
  }
});

Deno.test("a direct message sent while the gateway stops records its progress, though the store rested when the stop began", async () => {
  const store = openStateStore(":memory:", { now: () => T0 });
  const recordDirectProgress = store.recordDirectProgress;
  let progressWrites = 0;
  let locked = true;
  store.recordDirectProgress = (...args) => {
    progressWrites++;
    return locked ? LOCKED() : recordDirectProgress(...args);
  };
  const worker = directWorker(store, async (_job, onPart) => {
    for (let part = 1; part <= 3; part++) await onPart(part, 3, SENT);
    return { target: "telegram", parts: 3, destination: "chat 42" };
  }, { now: () => T0, setTimer: () => () => {} });
  worker.start();
  try {
    await worker.deliverNow(direct("before"), {}); // refused: the store rests
    assert.equal(progressWrites, 1);
    locked = false;
    await worker.stop({ deadlineMs: 0 });
    // The HTTP side drains after the worker stopped: a long message still goes out.
    await worker.deliverNow(direct("draining"), {});
    assert.equal(progressWrites, 3, "parts 1 and 2 of 3 recorded before the next went out");
  } finally {
    await store.close();
  }
});
