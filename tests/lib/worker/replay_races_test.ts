/**
 * Replays of direct messages racing the sender's own retries of the same delivery id, through
 * the real store, worker and direct-delivery path: every message is delivered at least once,
 * and a part already sent is not sent again.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { webhookReplay } from "../../../commands/webhook_replay.ts";
import { ConflictError, StoreUnavailableError, TargetError } from "../../../lib/errors.ts";
import type { NewEvent, StateStore } from "../../../lib/state/mod.ts";
import { openStateStore } from "../../../lib/state/sqlite/mod.ts";
import type { DeliveryJob } from "../../../lib/targets/mod.ts";
import { createWorker, type DeliverFn, STORE_REFUSED_RETRY_MS } from "../../../lib/worker/mod.ts";
import { deliverNow, deliveryKey } from "../../../server/ingest/_direct.ts";
import type { IngestDeps } from "../../../server/ingest/mod.ts";
import { enabledConfig, fakeContext, tempHome } from "../../_helpers.ts";

const T0 = 1_700_000_000_000;
const HOUR = 3_600_000;

function direct(overrides: Partial<NewEvent> = {}): NewEvent {
  return {
    subscription: "ci",
    eventLabel: "deploy",
    deliveryId: "d-1",
    dedupe: true,
    source: "generic",
    mode: "direct",
    payload: "{}",
    prompt: "a long message",
    route: { deliver: "telegram", chatId: "42", skills: [] },
    receivedAtMs: T0,
    ...overrides,
  } as NewEvent;
}

/** Runs a worker over `store` until nothing is due, moving a fake clock. */
async function runWorker(
  store: StateStore,
  clock: { now: number },
  deliver: DeliverFn,
  maxAttempts = 5,
  isBeingSent?: (subscription: string, deliveryId: string) => boolean,
  afterPass?: () => Promise<void>,
): Promise<void> {
  const timers: { at: number; cb: () => void }[] = [];
  const worker = createWorker({
    store,
    runAgent: () => Promise.resolve("answer"),
    deliver,
    systemPrompt: () => Promise.resolve(""),
    now: () => clock.now,
    random: () => 0.5,
    setTimer: (cb, ms) => {
      const t = { at: clock.now + ms, cb };
      timers.push(t);
      return () => void timers.splice(timers.indexOf(t) >>> 0, 1);
    },
    retry: { maxAttempts },
    log: () => {},
    isBeingSent,
  });
  worker.start();
  await worker.idle();
  await afterPass?.();
  for (let due = store.nextDueAtMs(); due !== null; due = store.nextDueAtMs()) {
    clock.now = Math.max(clock.now, due);
    await worker.idle();
    await afterPass?.();
  }
  await worker.stop({ deadlineMs: 0 });
}

/** The direct path's deps, as far as deliverNow uses them. */
function directDeps(store: StateStore, sent: DeliveryJob[], gate?: Promise<void>): IngestDeps {
  return {
    store,
    deliverDirect: async (job: DeliveryJob) => {
      await gate;
      sent.push(job);
      return { target: job.target, parts: 1, destination: "x" };
    },
  } as unknown as IngestDeps;
}

Deno.test("a replay that fails leaves the sender's later retry deliverable", async () => {
  const store = openStateStore(":memory:", { idempotencyTtlSeconds: 86_400 });
  const clock = { now: T0 };
  try {
    const failed = await store.recordDirect(direct(), { delivered: false, partsSent: 0 });
    store.replay(failed, T0 + 1);
    // While the replay waits, the sender's retry is told to come back, not that it is done.
    const waiting = await deliverNow(
      direct({ receivedAtMs: T0 + 2 }),
      {},
      directDeps(store, []),
      new Set(),
    );
    assert.equal(waiting.status, 409);
    assert.equal(waiting.headers.get("retry-after"), "5");
    // The target is still down: the replay ends as a dead letter.
    await runWorker(store, clock, () => Promise.reject(new TargetError("Telegram 502")), 2);
    assert.equal(store.getEvent(failed)!.status, "failed");
    // The target is back; the sender's next retry is sent.
    const sent: DeliveryJob[] = [];
    const answer = await deliverNow(
      direct({ receivedAtMs: clock.now + HOUR }),
      {},
      directDeps(store, sent),
      new Set(),
    );
    assert.equal(answer.status, 200, JSON.stringify(await answer.clone().json()));
    assert.equal(sent.length, 1);
  } finally {
    await store.close();
  }
});

Deno.test("replaying an earlier failed attempt resumes after the parts a later failed retry sent", async () => {
  const store = openStateStore(":memory:");
  const clock = { now: T0 + 10_000 };
  try {
    // Attempt A: part 1 of 4 went out. The sender's retry B resumed after it, sent 2 and 3.
    const a = await store.recordDirect(direct(), { delivered: false, partsSent: 1 });
    await store.recordDirect(direct({ receivedAtMs: T0 + 5000 }), {
      delivered: false,
      partsSent: 3,
    });
    assert.equal(store.replay(a, clock.now).partsSent, 3);
    const from: number[] = [];
    await runWorker(
      store,
      clock,
      (job) => (from.push(job.partsAlreadySent ?? 0), Promise.resolve()),
    );
    assert.deepEqual(from, [3]);
  } finally {
    await store.close();
  }
});

Deno.test("webhook replay's key lasts idempotency_ttl, not a fixed 24 h", async () => {
  await using h = await tempHome({ config: enabledConfig(8644, "      idempotency_ttl: 60\n") });
  const dbPath = join(h.home, "state", "gateway.db");
  let store = openStateStore(dbPath, { backgroundCheckpoints: false, idempotencyTtlSeconds: 60 });
  const failed = await store.recordDirect(direct(), { delivered: false, partsSent: 0 });
  await store.close();
  const ctx = fakeContext({ AGENT_HOME: h.home }, { now: () => T0 + 1000 });
  assert.equal(await webhookReplay.run([failed], ctx), 0);
  store = openStateStore(dbPath, { backgroundCheckpoints: false, idempotencyTtlSeconds: 60 });
  try {
    assert.equal(store.keyHolder("ci", "d-1", T0 + 2000) !== null, true);
    assert.equal(store.keyHolder("ci", "d-1", T0 + 1000 + HOUR) !== null, false);
  } finally {
    await store.close();
  }
});

Deno.test("a failed direct message the sender's retry delivered is not replayed, even after its key expired", async () => {
  const store = openStateStore(":memory:", { idempotencyTtlSeconds: 60, now: () => T0 + 5000 });
  try {
    const a = await store.recordDirect(direct(), { delivered: false, partsSent: 1 });
    const b = await store.recordDirect(direct({ receivedAtMs: T0 + 5000 }), {
      delivered: true,
      partsSent: 4,
    });
    assert.throws(
      () => store.replay(a, T0 + 2 * HOUR),
      (error: Error) => error instanceof ConflictError && error.message.includes(`event ${b}`),
    );
    assert.equal(store.getEvent(a)!.status, "failed", "left as it was");
  } finally {
    await store.close();
  }
});

Deno.test("a replay delivered after a wait longer than the key's life holds its delivery id anew", async () => {
  const store = openStateStore(":memory:", { idempotencyTtlSeconds: 86_400 });
  const clock = { now: T0 + 1 };
  try {
    const a = await store.recordDirect(direct(), { delivered: false, partsSent: 0 });
    store.replay(a, clock.now);
    let calls = 0;
    await runWorker(
      store,
      clock,
      () =>
        ++calls === 1
          ? Promise.reject(new TargetError("429", { retryAfterSeconds: 2 * 86_400 }))
          : Promise.resolve(),
    );
    assert.equal(store.getEvent(a)!.status, "delivered");
    assert.equal(store.keyHolder("ci", "d-1", clock.now + 1000) !== null, true);
  } finally {
    await store.close();
  }
});

Deno.test("a replay waits while the sender's retry of the same message is being sent, then fails", async () => {
  const store = openStateStore(":memory:");
  const clock = { now: T0 + 10_000 };
  try {
    const a = await store.recordDirect(direct(), { delivered: false, partsSent: 0 });
    // The sender's retry B is under way: the target is slow.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const sentDirect: DeliveryJob[] = [];
    const directInFlight = new Set<string>();
    const b = deliverNow(
      direct({ receivedAtMs: T0 + 5000 }),
      {},
      directDeps(store, sentDirect, gate),
      directInFlight,
    );
    assert.ok(directInFlight.has(deliveryKey("ci", "d-1")));
    // Meanwhile the operator replays A, and the worker would send it: it must not.
    store.replay(a, clock.now);
    const sentByWorker: DeliveryJob[] = [];
    const isBeingSent = (subscription: string, deliveryId: string) =>
      directInFlight.has(deliveryKey(subscription, deliveryId));
    // B ends while the replay's first attempt waits for its retry.
    await runWorker(
      store,
      clock,
      (job) => (sentByWorker.push(job), Promise.resolve()),
      5,
      isBeingSent,
      async () => {
        release();
        await b;
      },
    );
    assert.equal(sentDirect.length + sentByWorker.length, 1, "sent once");
    assert.equal(store.getEvent(a)!.status, "failed");
    assert.match(store.getEvent(a)!.lastError ?? "", /delivered meanwhile/);
  } finally {
    await store.close();
  }
});

Deno.test("replaying a failure that sent nothing resumes after the parts a later failed retry sent", async () => {
  const store = openStateStore(":memory:");
  try {
    const a = await store.recordDirect(direct(), { delivered: false, partsSent: 0 });
    await store.recordDirect(direct({ receivedAtMs: T0 + 5000 }), {
      delivered: false,
      partsSent: 2,
    });
    assert.equal(store.replay(a, T0 + 10_000).partsSent, 2);
  } finally {
    await store.close();
  }
});

Deno.test("a replay that waited for the sender's retry resumes after the parts that retry got out", async () => {
  const store = openStateStore(":memory:");
  const clock = { now: T0 + 10_000 };
  try {
    const a = await store.recordDirect(direct(), { delivered: false, partsSent: 1 });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const directInFlight = new Set<string>();
    const deps = {
      store,
      deliverDirect: async (job: DeliveryJob, onPart: (n: number) => void) => {
        // The retry resumes after part 1, sends parts 2 and 3, then the target fails.
        assert.equal(job.partsAlreadySent, 1);
        await gate;
        onPart(2);
        onPart(3);
        throw new TargetError("Telegram 502");
      },
    } as unknown as IngestDeps;
    const b = deliverNow(direct({ receivedAtMs: T0 + 5000 }), {}, deps, directInFlight);
    store.replay(a, clock.now);
    const from: number[] = [];
    await runWorker(
      store,
      clock,
      (job) => (from.push(job.partsAlreadySent ?? 0), Promise.resolve()),
      5,
      (subscription, deliveryId) => directInFlight.has(deliveryKey(subscription, deliveryId)),
      async () => {
        release();
        await b;
      },
    );
    assert.equal((await b).status, 502);
    assert.deepEqual(from, [3], "resumed after part 3");
  } finally {
    await store.close();
  }
});

Deno.test("a failed replay of a delivered direct message keeps its delivery id: the sender's retry is a duplicate", async () => {
  const store = openStateStore(":memory:", { now: () => T0 + 1 });
  const clock = { now: T0 + 10_000 };
  try {
    const a = await store.recordDirect(direct(), { delivered: true, partsSent: 1 });
    store.replay(a, clock.now);
    // While the resend waits, the message counts as delivered (it was): a duplicate, not 409.
    const waiting = await deliverNow(
      direct({ receivedAtMs: clock.now }),
      {},
      directDeps(store, []),
      new Set(),
    );
    assert.equal((await waiting.json()).status, "duplicate");
    await runWorker(
      store,
      clock,
      () => Promise.reject(new TargetError("down", { permanent: true })),
    );
    assert.equal(store.getEvent(a)!.status, "failed");
    const sent: DeliveryJob[] = [];
    const answer = await deliverNow(
      direct({ receivedAtMs: clock.now + 1000 }),
      {},
      directDeps(store, sent),
      new Set(),
    );
    assert.equal((await answer.json()).status, "duplicate");
    assert.equal(sent.length, 0);
  } finally {
    await store.close();
  }
});

for (const delivered of [false, true]) {
  const what = delivered ? "a resend of a message delivered once" : "a replay";
  Deno.test(`${what} whose key expired while it waited still makes the sender's retry wait`, async () => {
    const store = openStateStore(":memory:", { idempotencyTtlSeconds: 60, now: () => T0 });
    const clock = { now: T0 + 1000 };
    try {
      const a = await store.recordDirect(direct(), { delivered, partsSent: delivered ? 1 : 0 });
      store.replay(a, clock.now);
      let sends = 0;
      let calls = 0;
      const directInFlight = new Set<string>();
      let httpResult: Promise<Response> | undefined;
      await runWorker(
        store,
        clock,
        async () => {
          if (++calls === 1) throw new TargetError("429", { retryAfterSeconds: 120 });
          sends++;
          // While the worker sends (the event is running, its key expired), the sender retries.
          const deps = {
            store,
            deliverDirect: () => (sends++, Promise.resolve({ target: "telegram", parts: 1 })),
          } as unknown as IngestDeps;
          httpResult = deliverNow(
            direct({ receivedAtMs: clock.now + 10 }),
            {},
            deps,
            directInFlight,
          );
          await httpResult;
        },
        5,
        (subscription, deliveryId) => directInFlight.has(deliveryKey(subscription, deliveryId)),
      );
      assert.equal((await httpResult!).status, 409);
      assert.equal(sends, 1);
    } finally {
      await store.close();
    }
  });
}

Deno.test("replaying a delivered direct message sends it whole, not after an old failed attempt's parts", async () => {
  const store = openStateStore(":memory:", { now: () => T0 + 5000 });
  const clock = { now: T0 + 10_000 };
  try {
    // The sender's first request got 2 of 4 parts out, its retry sent parts 3 and 4.
    await store.recordDirect(direct(), { delivered: false, partsSent: 2 });
    const b = await store.recordDirect(direct({ receivedAtMs: T0 + 5000 }), {
      delivered: true,
      partsSent: 4,
    });
    // The operator sends it again (the chat lost it): the whole message.
    assert.equal(store.replay(b, clock.now).partsSent, 0);
    const from: number[] = [];
    await runWorker(
      store,
      clock,
      (job) => (from.push(job.partsAlreadySent ?? 0), Promise.resolve()),
    );
    assert.deepEqual(from, [0], "the whole message");
  } finally {
    await store.close();
  }
});

Deno.test("a failed resend of a delivered message, replayed again, resumes after its own parts only", async () => {
  const store = openStateStore(":memory:", { now: () => T0 + 5000 });
  const clock = { now: T0 + 10_000 };
  try {
    await store.recordDirect(direct(), { delivered: false, partsSent: 3 });
    const b = await store.recordDirect(direct({ receivedAtMs: T0 + 5000 }), {
      delivered: true,
      partsSent: 4,
    });
    store.replay(b, clock.now);
    // The resend gets part 1 out, then the target refuses for good.
    await runWorker(store, clock, (_job, onPart) => {
      onPart?.(1, 4);
      return Promise.reject(new TargetError("down", { permanent: true }));
    });
    assert.equal(store.getEvent(b)!.status, "failed");
    assert.equal(store.getEvent(b)!.partsSent, 1);
    const replayed = store.replay(b, clock.now + 1000);
    assert.equal(replayed.partsSent, 1, "after the resend's own part");
  } finally {
    await store.close();
  }
});

Deno.test("direct mode tries to record a long message's progress once per rest while the store refuses it, and still records the outcome", async () => {
  const store = openStateStore(":memory:", { now: () => T0 });
  try {
    let refusals = 0;
    store.recordDirectProgress = () => {
      refusals += 1; // each refusal held the event loop for the busy timeout
      return Promise.reject(new StoreUnavailableError("State database error: database is locked"));
    };
    let now = T0;
    const response = await deliverNow(direct(), {}, {
      store,
      now: () => now,
      deliverDirect: async (_job: DeliveryJob, onPart: (n: number, parts: number) => unknown) => {
        for (let part = 1; part <= 6; part++) {
          if (part === 4) now += STORE_REFUSED_RETRY_MS; // a slow platform
          await onPart(part, 6);
        }
        return { target: "telegram", parts: 6, destination: "chat 42" };
      },
    } as unknown as IngestDeps, new Set());
    assert.equal(response.status, 200);
    assert.equal(refusals, 2, "at part 1, then once the rest was over, not once per part");
    const [recorded] = store.listEvents({});
    assert.deepEqual([recorded.status, recorded.partsSent], ["delivered", 6]);
  } finally {
    await store.close();
  }
});

Deno.test("plain direct mode: first send, retry after 502 resumes, retry after 200 is a duplicate", async () => {
  const store = openStateStore(":memory:", { now: () => T0 });
  try {
    const first = await deliverNow(direct(), {}, {
      store,
      deliverDirect: (_job: DeliveryJob, onPart: (n: number) => void) => {
        onPart(2);
        return Promise.reject(new TargetError("502"));
      },
    } as unknown as IngestDeps, new Set());
    assert.equal(first.status, 502);
    const sent: DeliveryJob[] = [];
    const retry = await deliverNow(
      direct({ receivedAtMs: T0 + 1 }),
      {},
      directDeps(store, sent),
      new Set(),
    );
    assert.equal(retry.status, 200);
    assert.equal(sent[0].partsAlreadySent, 2);
    const again = await deliverNow(
      direct({ receivedAtMs: T0 + 2 }),
      {},
      directDeps(store, sent),
      new Set(),
    );
    assert.equal((await again.json()).status, "duplicate");
    assert.equal(sent.length, 1);
  } finally {
    await store.close();
  }
});

Deno.test("a new message that reuses a delivery id past its key's life can be replayed", async () => {
  const store = openStateStore(":memory:", { idempotencyTtlSeconds: 60, now: () => T0 });
  try {
    await store.recordDirect(direct(), { delivered: true, partsSent: 1 });
    // An hour later the sender reuses the delivery id for a new message, which fails.
    const deps = {
      store,
      deliverDirect: () => Promise.reject(new TargetError("502")),
    } as unknown as IngestDeps;
    const answer = await deliverNow(
      direct({ receivedAtMs: T0 + HOUR, prompt: "new" }),
      {},
      deps,
      new Set(),
    );
    assert.equal(answer.status, 502);
    const failed = store.listEvents({ status: "failed" })[0];
    assert.equal(store.replay(failed.id, T0 + HOUR + 1000).status, "queued");
  } finally {
    await store.close();
  }
});
