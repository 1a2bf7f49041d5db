/**
 * `agent webhook test`'s wait for the outcome, over a real state database on a fake clock:
 * each wait moves the clock and lets the test act as the gateway would.
 *
 * @module
 */
import assert from "node:assert/strict";
import { OUTCOME_POLL_MS, waitForOutcome } from "../../commands/_test_outcome.ts";
import { openStateStore, type SqliteStateStore } from "../../lib/state/sqlite/mod.ts";
import { newEvent, T0 } from "./_event_history.ts";

const RUN = {
  provider: "openai",
  model: "test-model",
  promptTokens: 12,
  completionTokens: 3,
  durationMs: 40,
};

/**
 * Waits for `eventId` in `store` for `waitMs`, running one of `steps` at each wait (which moves
 * the clock by the wait first).
 */
async function wait(
  store: SqliteStateStore,
  eventId: string,
  options: { waitMs: number; steps: ((nowMs: number) => Promise<unknown>)[] },
): Promise<{ code: number; out: string; waits: number[] }> {
  const clock = { now: T0 };
  const printed: string[] = [];
  const waits: number[] = [];
  const code = await waitForOutcome(store, eventId, {
    waitMs: options.waitMs,
    now: () => clock.now,
    sleep: async (ms) => {
      waits.push(ms);
      clock.now += ms;
      await options.steps.shift()?.(clock.now);
    },
    print: (text) => printed.push(text),
  });
  return { code, out: printed.join("\n"), waits };
}

Deno.test("test --wait prints each failed attempt, then the delivery with the run and message ids", async () => {
  const store = openStateStore(":memory:");
  try {
    const id = (await store.accept(newEvent({ receivedAtMs: T0 })) as { eventId: string }).eventId;
    const { code, out } = await wait(store, id, {
      waitMs: 30_000,
      steps: [
        (nowMs) => store.claimDue(nowMs, 1),
        (nowMs) =>
          store.markRetry(id, { error: "LLM 503", step: "agent", nextAttemptAtMs: nowMs, nowMs }),
        async (nowMs) => {
          await store.claimDue(nowMs, 1);
          await store.saveResponse(id, "answer", RUN);
          const receipt = { part: 1, parts: 1, target: "telegram", chat: "42", url: null };
          const receipts = [{ ...receipt, messageId: "77", sentAtMs: nowMs }];
          await store.savePartsSent(id, 1, { sentBefore: 0, parts: 1, receipts });
          await store.markDelivered(id, nowMs);
        },
      ],
    });
    assert.equal(code, 0);
    assert.equal(
      out,
      [
        "Attempt 1 failed at agent: LLM 503",
        `Delivered in ${3 * OUTCOME_POLL_MS} ms, after 2 attempts.`,
        "  agent: openai test-model, 12 prompt + 3 completion tokens, 40 ms",
        "  part 1/1: telegram 42, message 77",
        `Its whole story: agent webhook show ${id}`,
      ].join("\n"),
    );
  } finally {
    await store.close();
  }
});

Deno.test("test --wait prints a failure once, as the outcome, and exits 1", async () => {
  const store = openStateStore(":memory:");
  try {
    const id = (await store.accept(newEvent({ receivedAtMs: T0 })) as { eventId: string }).eventId;
    await store.claimDue(T0, 1);
    await store.markFailed(id, {
      error: "Telegram 403:\nbot was kicked",
      step: "delivery",
      nowMs: T0 + 900,
    });
    const { code, out, waits } = await wait(store, id, { waitMs: 30_000, steps: [] });
    assert.equal(code, 1);
    assert.deepEqual(waits, [], "finished already: no wait");
    assert.equal(
      out,
      `Failed after 1 attempt, 900 ms: Telegram 403: bot was kicked\nIts whole story: agent webhook show ${id}`,
    );
  } finally {
    await store.close();
  }
});

Deno.test("test --wait gives up after the wait, saying where the event is, and exits 1", async () => {
  const store = openStateStore(":memory:");
  try {
    const id = (await store.accept(newEvent({ receivedAtMs: T0 })) as { eventId: string }).eventId;
    const { code, out, waits } = await wait(store, id, { waitMs: 1_000, steps: [] });
    assert.equal(code, 1);
    assert.equal(waits.reduce((sum, ms) => sum + ms, 0), 1_000, "waits exactly --wait");
    assert.match(
      out,
      /^No outcome within 1 s: the event is queued\. agent webhook events --follow/,
    );
    const missing = await wait(store, "evt_elsewhere", { waitMs: 1_000, steps: [] });
    assert.equal(missing.code, 1);
    assert.match(missing.out, /not in this home's state database: .*AGENT_HOME/);
  } finally {
    await store.close();
  }
});
