/**
 * Conformance: `queueStats()`, the queue's size and its longest wait, which the gateway's
 * metrics read when they are scraped (docs/metrics.md).
 *
 * @module
 */
import assert from "node:assert/strict";
import { newEvent } from "../_fixtures.ts";
import type { Case } from "./_suite.ts";

const T0 = 1_700_000_000_000;
const FAR = T0 + 86_400_000;

/** The cases of `queueStats()`, `activity()` and `subscriptionCounts()`. */
export const queueCases: Case[] = [
  {
    name: "queueStats() counts queued events and the oldest's acceptance; others do not count",
    run: async (store) => {
      assert.deepEqual(await store.queueStats(), { queued: 0, oldestQueuedAtMs: null });
      for (const receivedAtMs of [T0 + 10, T0, T0 + 20, T0 + 30]) {
        await store.accept(newEvent({ receivedAtMs }));
      }
      assert.deepEqual(await store.queueStats(), { queued: 4, oldestQueuedAtMs: T0 });
      const [delivered] = await store.claimDue(FAR, 1);
      assert.deepEqual(
        await store.queueStats(),
        { queued: 3, oldestQueuedAtMs: T0 + 10 },
        "running",
      );
      await store.markDelivered(delivered.id, FAR);
      const [retried, failed] = await store.claimDue(FAR, 2);
      await store.markRetry(retried.id, {
        error: "x",
        step: "agent",
        nextAttemptAtMs: FAR,
        nowMs: FAR,
      });
      await store.markFailed(failed.id, { error: "x", step: "agent", nowMs: FAR });
      // The retried event waits again, counted from when it was accepted.
      assert.deepEqual(await store.queueStats(), { queued: 2, oldestQueuedAtMs: T0 + 10 });
    },
  },
  {
    name: "queueStats() counts a replayed event as queued since its replay",
    run: async (store) => {
      await store.accept(newEvent({ receivedAtMs: T0 }));
      const [claimed] = await store.claimDue(T0, 1);
      await store.markDelivered(claimed.id, T0 + 1000);
      assert.deepEqual(await store.queueStats(), { queued: 0, oldestQueuedAtMs: null });
      await store.replay(claimed.id, T0 + 5000);
      assert.deepEqual(await store.queueStats(), { queued: 1, oldestQueuedAtMs: T0 + 5000 });
    },
  },
  {
    name: "activity() counts accepted events by minute received, ended ones by minute ended",
    run: async (store) => {
      const MINUTE = 60_000;
      const start = Math.floor(T0 / MINUTE) * MINUTE;
      assert.deepEqual(await store.activity(start), []);
      await store.accept(newEvent({ receivedAtMs: start - 1 }));
      for (const offset of [0, 10, MINUTE + 5]) {
        await store.accept(newEvent({ receivedAtMs: start + offset }));
      }
      const [old, first, second] = await store.claimDue(FAR, 3);
      await store.markDelivered(old.id, start + 2 * MINUTE);
      await store.markDelivered(first.id, start + 2 * MINUTE + 1);
      await store.markFailed(second.id, { error: "x", step: "agent", nowMs: start + 3 * MINUTE });
      assert.deepEqual(await store.activity(start + 30), [
        { minuteMs: start, accepted: 2, delivered: 0, failed: 0 },
        { minuteMs: start + MINUTE, accepted: 1, delivered: 0, failed: 0 },
        { minuteMs: start + 2 * MINUTE, accepted: 0, delivered: 2, failed: 0 },
        { minuteMs: start + 3 * MINUTE, accepted: 0, delivered: 0, failed: 1 },
      ]);
    },
  },
  {
    name:
      "subscriptionCounts() counts accepted events by subscription since a time, ended ones too",
    run: async (store) => {
      const since = T0 + 100;
      assert.deepEqual(await store.subscriptionCounts(since), []);
      await store.accept(newEvent({ subscription: "old", receivedAtMs: T0 }));
      for (const subscription of ["b", "a", "a"]) {
        await store.accept(newEvent({ subscription, receivedAtMs: since }));
      }
      const [old, b, a1] = await store.claimDue(FAR, 3);
      await store.markDelivered(old.id, since + 1);
      await store.markDelivered(b.id, since + 2);
      await store.markFailed(a1.id, { error: "x", step: "agent", nowMs: since + 3 });
      assert.deepEqual(await store.subscriptionCounts(since), [
        { subscription: "a", accepted: 2, delivered: 0, failed: 1 },
        { subscription: "b", accepted: 1, delivered: 1, failed: 0 },
        { subscription: "old", accepted: 0, delivered: 1, failed: 0 },
      ]);
      assert.deepEqual(await store.subscriptionCounts(FAR + 1), [], "nothing after the window");
    },
  },
];
