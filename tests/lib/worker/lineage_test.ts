/**
 * What the worker records of an event's lineage: the agent run that answered (provider, model,
 * tokens, how long it took) with its answer, and what the platform answered for each part it
 * delivered, for the worker's events and for direct deliveries, including when the store
 * refused the first write.
 *
 * @module
 */
import assert from "node:assert/strict";
import { StoreUnavailableError } from "../../../lib/errors.ts";
import type { StateStore } from "../../../lib/state/mod.ts";
import { openStateStore } from "../../../lib/state/sqlite/mod.ts";
import type { SentPart } from "../../../lib/targets/mod.ts";
import { createWorker, type DeliverFn, type WorkerDeps } from "../../../lib/worker/mod.ts";
import { newEvent } from "../state/_fixtures.ts";
import { directWorker } from "../../fakes/direct_worker.ts";

const T0 = 1_700_000_000_000;

/** A delivery of `parts` parts to Telegram chat 42, each message id 500 + its number. */
function telegramParts(parts: number, clock?: { now: number }): DeliverFn {
  return async (job, onPartSent) => {
    for (let part = (job.partsAlreadySent ?? 0) + 1; part <= parts; part++) {
      if (clock) clock.now += 10;
      const sent: SentPart = { target: "telegram", destination: "42", messageId: `${500 + part}` };
      await onPartSent(part, parts, sent);
    }
    return { target: "telegram", parts, destination: "42" };
  };
}

/**
 * A worker over `store` on the clock `clock`, its runs taking 1.5 s of that clock; its timers
 * wait in `timers` until the test runs them.
 */
function worker(
  store: StateStore,
  clock: { now: number },
  options: { deliver: DeliverFn; timers?: (() => void)[] },
) {
  const deps: WorkerDeps = {
    store,
    runAgent: () => {
      clock.now += 1_500;
      return Promise.resolve({
        provider: "openai",
        text: "It is a duplicate of #12.",
        model: "gpt-4o-mini-2024-07-18",
        usage: { promptTokens: 812, completionTokens: 96 },
      });
    },
    deliver: options.deliver,
    systemPrompt: () => Promise.resolve("base"),
    now: () => clock.now,
    random: () => 0.5,
    setTimer: (callback) => (options.timers?.push(callback), () => {}),
    log: () => {},
  };
  return createWorker(deps);
}

Deno.test("the worker records the agent run, its answer and each part's message id", async () => {
  const store = openStateStore(":memory:");
  const clock = { now: T0 };
  const running = worker(store, clock, { deliver: telegramParts(2, clock) });
  try {
    const id = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
    running.start();
    await running.idle();
    const lineage = (await store.lineage(id))!;
    assert.equal(lineage.event.status, "delivered");
    assert.deepEqual(lineage.attempts[0].run, {
      provider: "openai",
      model: "gpt-4o-mini-2024-07-18",
      promptTokens: 812,
      completionTokens: 96,
      durationMs: 1_500,
    });
    assert.equal(lineage.attempts[0].answer, "It is a duplicate of #12.");
    assert.deepEqual(lineage.parts, [
      {
        part: 1,
        parts: 2,
        target: "telegram",
        chat: "42",
        messageId: "501",
        url: null,
        sentAtMs: T0 + 1_510,
      },
      {
        part: 2,
        parts: 2,
        target: "telegram",
        chat: "42",
        messageId: "502",
        url: null,
        sentAtMs: T0 + 1_520,
      },
    ]);
  } finally {
    await running.stop({ deadlineMs: 0 });
    await store.close();
  }
});

Deno.test("the run and the receipts the store refused are written with the attempt's outcome", async () => {
  const store = openStateStore(":memory:");
  const clock = { now: T0 };
  const { saveResponse, savePartsSent } = store;
  let refusing = true;
  const refuse = () => {
    throw new StoreUnavailableError("State database error: database is locked");
  };
  store.saveResponse = (...args) => refusing ? refuse() : saveResponse(...args);
  store.savePartsSent = (...args) => refusing ? refuse() : savePartsSent(...args);
  const timers: (() => void)[] = [];
  const running = worker(store, clock, { deliver: telegramParts(3), timers });
  try {
    const id = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
    running.start();
    await running.idle();
    assert.equal(
      (await store.getEvent(id))?.status,
      "running",
      "the outcome is held while it rests",
    );
    refusing = false;
    timers.splice(0).forEach((timer) => timer()); // the rest is over
    await running.idle();
    const lineage = (await store.lineage(id))!;
    assert.equal(lineage.event.status, "delivered");
    assert.equal(lineage.attempts[0].run?.completionTokens, 96);
    assert.deepEqual(lineage.parts.map((part) => part.messageId), ["501", "502", "503"]);
  } finally {
    await running.stop({ deadlineMs: 0 });
    await store.close();
  }
});

Deno.test("a direct delivery records each part's message id with its outcome", async () => {
  const store = openStateStore(":memory:", { now: () => T0 });
  const direct = directWorker(store, telegramParts(3), { now: () => T0 });
  try {
    const event = newEvent({ mode: "direct", route: { deliver: "telegram", skills: [] } });
    const result = await direct.deliverNow(event, {});
    assert.equal(result.status, "delivered");
    const eventId = result.status === "delivered" ? result.eventId! : "";
    const parts = (await store.lineage(eventId))!.parts;
    assert.deepEqual(parts.map((part) => [part.part, part.messageId, part.chat]), [
      [1, "501", "42"],
      [2, "502", "42"],
      [3, "503", "42"],
    ]);
  } finally {
    await store.close();
  }
});
