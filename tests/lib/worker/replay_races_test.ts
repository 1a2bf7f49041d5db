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
import type { DeliveryJob, SentPart } from "../../../lib/targets/mod.ts";
import {
  createWorker,
  type DeliverFn,
  type DirectResult,
  type EventWorker,
} from "../../../lib/worker/mod.ts";
import { enabledConfig, fakeContext, tempHome } from "../../_helpers.ts";
import { directWorker } from "../../fakes/direct_worker.ts";

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

/** Fake deliveries: the worker's (of queued events) and the direct one (while a sender waits). */
interface Deliveries {
  worker?: DeliverFn;
  direct?: DeliverFn;
}

/** One worker over `store`, on a fake clock, with its deliveries and the direct path. */
interface Harness {
  worker: EventWorker;
  /** A sender's request for a direct message, sent by the worker while the sender waits. */
  send(event: NewEvent): Promise<DirectResult>;
  /** Runs the worker until nothing is due, moving the clock; `afterPass` runs after each pass. */
  run(afterPass?: () => Promise<void>): Promise<void>;
}

function harness(
  store: StateStore,
  clock: { now: number },
  deliveries: Deliveries,
  maxAttempts = 5,
): Harness {
  const timers: { at: number; cb: () => void }[] = [];
  const worker = createWorker({
    store,
    runAgent: () => Promise.resolve({ provider: "command", text: "answer" }),
    deliver: (job, onPart, options) =>
      (options?.senderWaits ? deliveries.direct : deliveries.worker)!(job, onPart, options),
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
  });
  return {
    worker,
    send: (event) => worker.deliverNow(event, {}),
    async run(afterPass) {
      worker.start();
      await worker.idle();
      await afterPass?.();
      for (let due = await store.nextDueAtMs(); due !== null; due = await store.nextDueAtMs()) {
        clock.now = Math.max(clock.now, due);
        await worker.idle();
        await afterPass?.();
      }
      await worker.stop({ deadlineMs: 0 });
    },
  };
}

/** Runs a worker over `store` until nothing is due, moving a fake clock. */
function runWorker(
  store: StateStore,
  clock: { now: number },
  deliver: DeliverFn,
  maxAttempts = 5,
): Promise<void> {
  return harness(store, clock, { worker: deliver }, maxAttempts).run();
}

/** A direct delivery that waits for `gate`, then sends the message whole. */
function sendsTo(sent: DeliveryJob[], gate?: Promise<void>): DeliverFn {
  return async (job) => {
    await gate;
    sent.push(job);
    return { target: job.target, parts: 1, destination: "x" };
  };
}

/** What a fake delivery answers. */
const RECEIPT = { target: "telegram", parts: 1, destination: "chat 42" };
/** A part as a fake delivery reports it sent. */
const SENT: SentPart = { target: "telegram", destination: "chat 42", messageId: "7" };

Deno.test("a replay that fails leaves the sender's later retry deliverable", async () => {
  const store = openStateStore(":memory:", { idempotencyTtlSeconds: 86_400 });
  const clock = { now: T0 };
  try {
    const failed = await store.recordDirect(direct(), { delivered: false, partsSent: 0 });
    await store.replay(failed, T0 + 1);
    const sent: DeliveryJob[] = [];
    const h = harness(store, clock, {
      worker: () => Promise.reject(new TargetError("Telegram 502")),
      direct: sendsTo(sent),
    }, 2);
    // While the replay waits, the sender's retry is told to come back, not that it is done.
    const waiting = await h.send(direct({ receivedAtMs: T0 + 2 }));
    assert.equal(waiting.status, "busy");
    assert.equal(waiting.retryAfterSeconds, 5);
    // The target is still down: the replay ends as a dead letter.
    await h.run();
    assert.equal((await store.getEvent(failed))!.status, "failed");
    // The target is back; the sender's next retry is sent.
    const answer = await h.send(direct({ receivedAtMs: clock.now + HOUR }));
    assert.equal(answer.status, "delivered", JSON.stringify(answer));
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
    assert.equal((await store.replay(a, clock.now)).partsSent, 3);
    const from: number[] = [];
    await runWorker(
      store,
      clock,
      (job) => (from.push(job.partsAlreadySent ?? 0), Promise.resolve(RECEIPT)),
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
    assert.equal(await store.keyHolder("ci", "d-1", T0 + 2000) !== null, true);
    assert.equal(await store.keyHolder("ci", "d-1", T0 + 1000 + HOUR) !== null, false);
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
    await assert.rejects(
      () => store.replay(a, T0 + 2 * HOUR),
      (error: Error) => error instanceof ConflictError && error.message.includes(`event ${b}`),
    );
    assert.equal((await store.getEvent(a))!.status, "failed", "left as it was");
  } finally {
    await store.close();
  }
});

Deno.test("a replay delivered after a wait longer than the key's life holds its delivery id anew", async () => {
  const store = openStateStore(":memory:", { idempotencyTtlSeconds: 86_400 });
  const clock = { now: T0 + 1 };
  try {
    const a = await store.recordDirect(direct(), { delivered: false, partsSent: 0 });
    await store.replay(a, clock.now);
    let calls = 0;
    await runWorker(
      store,
      clock,
      () =>
        ++calls === 1
          ? Promise.reject(new TargetError("429", { retryAfterSeconds: 2 * 86_400 }))
          : Promise.resolve(RECEIPT),
    );
    assert.equal((await store.getEvent(a))!.status, "delivered");
    assert.equal(await store.keyHolder("ci", "d-1", clock.now + 1000) !== null, true);
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
    const sentByWorker: DeliveryJob[] = [];
    const h = harness(store, clock, {
      direct: sendsTo(sentDirect, gate),
      worker: (job) => (sentByWorker.push(job), Promise.resolve(RECEIPT)),
    });
    const b = h.send(direct({ receivedAtMs: T0 + 5000 }));
    assert.equal((await h.send(direct({ receivedAtMs: T0 + 5001 }))).status, "busy");
    // Meanwhile the operator replays A, and the worker would send it: it must not.
    await store.replay(a, clock.now);
    // B ends while the replay's first attempt waits for its retry.
    await h.run(async () => {
      release();
      await b;
    });
    assert.equal(sentDirect.length + sentByWorker.length, 1, "sent once");
    assert.equal((await store.getEvent(a))!.status, "failed");
    assert.match((await store.getEvent(a))!.lastError ?? "", /delivered meanwhile/);
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
    assert.equal((await store.replay(a, T0 + 10_000)).partsSent, 2);
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
    const sending = Promise.withResolvers<void>();
    const from: number[] = [];
    const h = harness(store, clock, {
      direct: async (job, onPart) => {
        // The retry resumes after part 1, sends parts 2 and 3, then the target fails.
        assert.equal(job.partsAlreadySent, 1);
        sending.resolve();
        await gate;
        await onPart(2, 4, SENT);
        await onPart(3, 4, SENT);
        throw new TargetError("Telegram 502");
      },
      worker: (job) => (from.push(job.partsAlreadySent ?? 0), Promise.resolve(RECEIPT)),
    });
    const b = h.send(direct({ receivedAtMs: T0 + 5000 }));
    await sending.promise; // the retry is being sent when the replay is queued
    await store.replay(a, clock.now);
    await h.run(async () => {
      release();
      await b;
    });
    assert.equal((await b).status, "failed");
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
    await store.replay(a, clock.now);
    const sent: DeliveryJob[] = [];
    const h = harness(store, clock, {
      worker: () => Promise.reject(new TargetError("down", { permanent: true })),
      direct: sendsTo(sent),
    });
    // While the resend waits, the message counts as delivered (it was): a duplicate, not 409.
    const waiting = await h.send(direct({ receivedAtMs: clock.now }));
    assert.equal(waiting.status, "duplicate");
    await h.run();
    assert.equal((await store.getEvent(a))!.status, "failed");
    const answer = await h.send(direct({ receivedAtMs: clock.now + 1000 }));
    assert.equal(answer.status, "duplicate");
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
      await store.replay(a, clock.now);
      let sends = 0;
      let calls = 0;
      let httpResult: Promise<DirectResult> | undefined;
      const h: Harness = harness(store, clock, {
        worker: async () => {
          if (++calls === 1) throw new TargetError("429", { retryAfterSeconds: 120 });
          sends++;
          // While the worker sends (the event is running, its key expired), the sender retries.
          httpResult = h.send(direct({ receivedAtMs: clock.now + 10 }));
          await httpResult;
          return RECEIPT;
        },
        direct: () => (sends++, Promise.resolve(RECEIPT)),
      });
      await h.run();
      assert.equal((await httpResult!).status, "busy");
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
    assert.equal((await store.replay(b, clock.now)).partsSent, 0);
    const from: number[] = [];
    await runWorker(
      store,
      clock,
      (job) => (from.push(job.partsAlreadySent ?? 0), Promise.resolve(RECEIPT)),
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
    await store.replay(b, clock.now);
    // The resend gets part 1 out, then the target refuses for good.
    await runWorker(store, clock, (_job, onPart) => {
      onPart?.(1, 4, SENT);
      return Promise.reject(new TargetError("down", { permanent: true }));
    });
    assert.equal((await store.getEvent(b))!.status, "failed");
    assert.equal((await store.getEvent(b))!.partsSent, 1);
    const replayed = await store.replay(b, clock.now + 1000);
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
    const rests: (() => void)[] = [];
    const worker = directWorker(store, async (_job, onPart) => {
      for (let part = 1; part <= 6; part++) {
        if (part === 4) rests.splice(0).forEach((endRest) => endRest()); // a slow platform
        await onPart(part, 6, SENT);
      }
      return { target: "telegram", parts: 6, destination: "chat 42" };
    }, { now: () => T0, setTimer: (callback) => (rests.push(callback), () => {}) });
    const result = await worker.deliverNow(direct(), {});
    assert.equal(result.status, "delivered");
    assert.equal(refusals, 2, "at part 1, then once the rest was over, not once per part");
    const [recorded] = await store.listEvents({});
    assert.deepEqual([recorded.status, recorded.partsSent], ["delivered", 6]);
  } finally {
    await store.close();
  }
});

Deno.test("plain direct mode: first send, retry after 502 resumes, retry after 200 is a duplicate", async () => {
  const store = openStateStore(":memory:", { now: () => T0 });
  try {
    const sent: DeliveryJob[] = [];
    let failing = true;
    const worker = directWorker(store, async (job, onPart) => {
      if (failing) {
        await onPart(2, 3, SENT);
        throw new TargetError("502");
      }
      return sendsTo(sent)(job, onPart);
    }, { now: () => T0 });
    const first = await worker.deliverNow(direct(), {});
    assert.equal(first.status, "failed");
    failing = false;
    const retry = await worker.deliverNow(direct({ receivedAtMs: T0 + 1 }), {});
    assert.equal(retry.status, "delivered");
    assert.equal(sent[0].partsAlreadySent, 2);
    const again = await worker.deliverNow(direct({ receivedAtMs: T0 + 2 }), {});
    assert.equal(again.status, "duplicate");
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
    const worker = directWorker(store, () => Promise.reject(new TargetError("502")));
    const answer = await worker.deliverNow(direct({ receivedAtMs: T0 + HOUR, prompt: "new" }), {});
    assert.equal(answer.status, "failed");
    const failed = (await store.listEvents({ status: "failed" }))[0];
    assert.equal((await store.replay(failed.id, T0 + HOUR + 1000)).status, "queued");
  } finally {
    await store.close();
  }
});
