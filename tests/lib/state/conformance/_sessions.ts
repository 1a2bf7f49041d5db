/**
 * Conformance: conversations (docs/subscriptions.md#conversations). An event's conversation key
 * is stored with it; the claim runs a conversation's events one at a time, in the order they
 * arrived; `saveResponse()` writes each run's turn with its answer, and `sessionTurns()` reads
 * them back until `sessionTtlSeconds` has passed, when `prune()` deletes them.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { StateStore } from "../../../../lib/state/mod.ts";
import { newEvent } from "../_fixtures.ts";
import type { Case } from "./_suite.ts";

const T0 = 1_700_000_000_000;
const LATER = T0 + 60_000;

/** Accepts an event of the conversation `key` (none when undefined); returns its id. */
async function acceptOf(
  store: StateStore,
  key: string | undefined,
  overrides: { subscription?: string; prompt?: string; receivedAtMs?: number } = {},
): Promise<string> {
  const result = await store.accept(newEvent({
    receivedAtMs: T0,
    ...overrides,
    ...(key === undefined ? {} : { sessionKey: key }),
  }));
  assert.equal(result.status, "accepted");
  return result.eventId!;
}

/** The ids `claimDue` takes at `nowMs`, up to 10. */
async function claimIds(store: StateStore, nowMs = LATER): Promise<string[]> {
  return (await store.claimDue(nowMs, 10)).map((event) => event.id);
}

/** The cases of conversations. */
export const sessionCases: Case[] = [
  {
    name: "accept() stores an event's conversation key, and claimDue() gives it back",
    run: async (store) => {
      const id = await acceptOf(store, "octo/repo#1");
      assert.equal((await store.getEvent(id))?.sessionKey, "octo/repo#1");
      const [claimed] = await store.claimDue(LATER, 1);
      assert.equal(claimed.sessionKey, "octo/repo#1");
      const plain = await acceptOf(store, undefined);
      assert.equal((await store.getEvent(plain))?.sessionKey, undefined);
    },
  },
  {
    name: "claimDue() runs one event of a conversation at a time, in the order they arrived",
    run: async (store) => {
      const first = await acceptOf(store, "k");
      const second = await acceptOf(store, "k");
      const otherKey = await acceptOf(store, "j");
      const otherSubscription = await acceptOf(store, "k", { subscription: "other" });
      const none = await acceptOf(store, undefined);
      assert.deepEqual(await claimIds(store), [first, otherKey, otherSubscription, none]);
      assert.deepEqual(await claimIds(store), [], "the second waits while the first runs");
      await store.markDelivered(first, LATER);
      assert.deepEqual(await claimIds(store), [second]);
    },
  },
  {
    name: "claimDue() holds a later event of a conversation while an earlier one waits to retry",
    run: async (store) => {
      const first = await acceptOf(store, "k");
      const second = await acceptOf(store, "k");
      assert.deepEqual(await claimIds(store), [first]);
      const retryAt = LATER + 30_000;
      await store.markRetry(first, {
        error: "x",
        step: "agent",
        nextAttemptAtMs: retryAt,
        nowMs: LATER,
      });
      assert.deepEqual(await claimIds(store, LATER + 1), [], "the second is due, but waits");
      assert.equal(await store.nextDueAtMs(), retryAt, "the held event is not due");
      assert.deepEqual(await claimIds(store, retryAt), [first]);
      await store.markFailed(first, { error: "x", step: "agent", nowMs: retryAt });
      assert.deepEqual(await claimIds(store, retryAt), [second], "a failed event holds nothing");
    },
  },
  {
    name: "claimDue() does not run a replayed event while a later one of its conversation runs",
    run: async (store) => {
      const first = await acceptOf(store, "k");
      assert.deepEqual(await claimIds(store), [first]);
      await store.markDelivered(first, LATER);
      const second = await acceptOf(store, "k", { receivedAtMs: LATER });
      assert.deepEqual(await claimIds(store), [second]);
      await store.replay(first, LATER + 1);
      assert.deepEqual(
        await claimIds(store, LATER + 2),
        [],
        "the replay waits for the running one",
      );
      await store.markDelivered(second, LATER + 3);
      assert.deepEqual(await claimIds(store, LATER + 4), [first]);
    },
  },
  {
    name:
      "saveResponse() writes a turn of the conversation; sessionTurns() reads them oldest first",
    options: { now: () => LATER },
    run: async (store) => {
      const first = await acceptOf(store, "k", { prompt: "first prompt" });
      const other = await acceptOf(store, "k", { subscription: "other", prompt: "elsewhere" });
      const plain = await acceptOf(store, undefined, { prompt: "no conversation" });
      const second = await acceptOf(store, "k", { prompt: "second prompt" });
      assert.deepEqual(await store.sessionTurns("gh", "k", LATER), []);
      await store.claimDue(LATER, 10);
      await store.saveResponse(first, "first answer");
      await store.saveResponse(other, "other answer");
      await store.saveResponse(plain, "plain answer");
      await store.markDelivered(first, LATER);
      await store.claimDue(LATER, 10);
      await store.saveResponse(second, "second answer");
      assert.deepEqual(await store.sessionTurns("gh", "k", LATER), [
        { eventId: first, prompt: "first prompt", answer: "first answer", atMs: LATER },
        { eventId: second, prompt: "second prompt", answer: "second answer", atMs: LATER },
      ]);
      assert.deepEqual((await store.sessionTurns("other", "k", LATER)).map((t) => t.answer), [
        "other answer",
      ]);
      assert.deepEqual(await store.sessionTurns("gh", "j", LATER), []);
    },
  },
  {
    name: "sessionTurns() forgets turns older than sessionTtlSeconds, and prune() deletes them",
    onPlace: async (place) => {
      let nowMs = T0;
      const ttlSeconds = 3600;
      const store = await place.open({ now: () => nowMs, sessionTtlSeconds: ttlSeconds });
      try {
        const old = await acceptOf(store, "k", { prompt: "old" });
        await store.claimDue(T0, 1);
        await store.saveResponse(old, "old answer");
        await store.markDelivered(old, T0);
        nowMs = T0 + 1000;
        const recent = await acceptOf(store, "k", { prompt: "recent", receivedAtMs: nowMs });
        await store.claimDue(nowMs, 1);
        await store.saveResponse(recent, "recent answer");
        const justBefore = T0 + ttlSeconds * 1000 - 1;
        assert.equal((await store.sessionTurns("gh", "k", justBefore)).length, 2);
        const after = T0 + ttlSeconds * 1000;
        assert.deepEqual((await store.sessionTurns("gh", "k", after)).map((t) => t.prompt), [
          "recent",
        ]);
        await store.prune(after, { retentionDays: 3650 });
        // Deleted, not only hidden: read as of its own time, the old turn is gone.
        assert.deepEqual((await store.sessionTurns("gh", "k", T0)).map((t) => t.prompt), [
          "recent",
        ]);
      } finally {
        await store.close();
      }
    },
  },
  {
    name: "a run redone after a crash writes its turn once: the turn goes with the answer",
    onPlace: async (place) => {
      const store = await place.open({ now: () => LATER });
      const id = await acceptOf(store, "k", { prompt: "p" });
      await store.claimDue(LATER, 1);
      await store.saveResponse(id, "answered before the crash");
      await store.close();
      const reopened = await place.open({ now: () => LATER });
      try {
        assert.equal(await reopened.recoverInterrupted(LATER + 1), 1);
        const [again] = await reopened.claimDue(LATER + 1, 1);
        assert.equal(again.response, "answered before the crash", "no run needed again");
        await reopened.markDelivered(id, LATER + 2);
        assert.deepEqual((await reopened.sessionTurns("gh", "k", LATER + 2)).map((t) => t.answer), [
          "answered before the crash",
        ]);
      } finally {
        await reopened.close();
      }
    },
  },
];
