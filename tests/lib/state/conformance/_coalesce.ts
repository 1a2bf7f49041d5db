/**
 * Conformance: coalescing windows (docs/subscriptions.md#coalescing). `accept()` opens or
 * slides a key's window, `claimDue()` folds the due events of a window into the run of its
 * first, `foldedInto()` reads them, and the run's outcome becomes theirs; a crash between any
 * two of these loses no event and runs none twice.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { NewEvent, StateStore } from "../../../../lib/state/mod.ts";
import { newEvent } from "../_fixtures.ts";
import type { Case } from "./_suite.ts";

const T0 = 1_700_000_000_000;
const SECOND = 1000;

/** An event of subscription `gh` coalesced on `key`, with a 10 s window, 60 s at most. */
function burst(atMs: number, key = "octo/repo#1", extra: Partial<NewEvent> = {}): NewEvent {
  return newEvent({
    receivedAtMs: atMs,
    prompt: `event at +${(atMs - T0) / SECOND} s`,
    route: {
      deliver: "log",
      skills: [],
      coalesce: { key, windowSeconds: 10, maxSeconds: 60 },
    },
    ...extra,
  });
}

/** Accepts the events in order; returns their ids. */
async function acceptAll(store: StateStore, events: NewEvent[]): Promise<string[]> {
  const ids: string[] = [];
  for (const event of events) {
    const result = await store.accept(event);
    assert.equal(result.status, "accepted");
    ids.push(result.eventId!);
  }
  return ids;
}

/** Claims until nothing more is claimable at `nowMs`; returns the ids in claim order. */
async function claimAll(store: StateStore, nowMs: number): Promise<string[]> {
  const ids: string[] = [];
  for (let round = 0; round < 4; round++) {
    const claimed = await store.claimDue(nowMs, 8);
    if (claimed.length === 0) break;
    ids.push(...claimed.map((event) => event.id));
  }
  return ids;
}

/** The cases of coalescing. */
export const coalesceCases: Case[] = [
  {
    name: "accept() slides a coalescing window: the burst is due 10 s after its last event",
    run: async (store) => {
      await acceptAll(store, [burst(T0), burst(T0 + 4 * SECOND), burst(T0 + 7 * SECOND)]);
      assert.equal(await store.nextDueAtMs(), T0 + 17 * SECOND);
      assert.deepEqual(
        await store.claimDue(T0 + 17 * SECOND - 1, 8),
        [],
        "none before the window ends",
      );
    },
  },
  {
    name: "claimDue() folds a window's events into the run of its first; the outcome is theirs",
    run: async (store) => {
      const ids = await acceptAll(store, [burst(T0), burst(T0 + SECOND), burst(T0 + 2 * SECOND)]);
      const claimed = await store.claimDue(T0 + 12 * SECOND, 8);
      assert.deepEqual(claimed.map((event) => event.id), [ids[0]], "one run, of the first");
      const folded = await store.foldedInto(ids[0]);
      assert.deepEqual(folded.map((event) => event.id), ids.slice(1));
      assert.deepEqual(folded.map((event) => event.coalescedInto), [ids[0], ids[0]]);
      assert.deepEqual(folded.map((event) => event.status), ["queued", "queued"]);
      assert.equal(await store.nextDueAtMs(), null, "the folded events are due never on their own");
      await store.markDelivered(ids[0], T0 + 13 * SECOND);
      for (const id of ids) assert.equal((await store.getEvent(id))?.status, "delivered");
      assert.deepEqual(await store.foldedInto(ids[1]), [], "a folded event answers no other");
    },
  },
  {
    name: "a window stays open at most maxSeconds after its first event",
    run: async (store) => {
      // An event every 8 s, each within 10 s of the last: without the cap, due never.
      const times = Array.from({ length: 10 }, (_, i) => T0 + i * 8 * SECOND);
      const ids = await acceptAll(store, times.slice(0, 8).map((atMs) => burst(atMs)));
      assert.equal(await store.nextDueAtMs(), T0 + 60 * SECOND);
      const [run] = await store.claimDue(T0 + 60 * SECOND, 8);
      assert.equal(run.id, ids[0]);
      assert.equal((await store.foldedInto(run.id)).length, 7, "the events of the first 60 s");
      // The events after the claim open a window of their own.
      await acceptAll(store, times.slice(8).map((atMs) => burst(atMs)));
      assert.equal(await store.nextDueAtMs(), T0 + 82 * SECOND);
    },
  },
  {
    name: "events of other keys and other subscriptions are not folded together",
    run: async (store) => {
      const ids = await acceptAll(store, [
        burst(T0),
        burst(T0 + SECOND, "octo/repo#2"),
        burst(T0 + 2 * SECOND, "octo/repo#1", { subscription: "other" }),
        newEvent({ receivedAtMs: T0 + 3 * SECOND }),
      ]);
      const claimed = await store.claimDue(T0 + 20 * SECOND, 8);
      assert.deepEqual(claimed.map((event) => event.id).sort(), [...ids].sort());
      for (const id of ids) assert.deepEqual(await store.foldedInto(id), []);
    },
  },
  {
    name: "a key wider than the conversation folds only the lead's conversation's events",
    run: async (store) => {
      const [a1, b1, a2] = await acceptAll(store, [
        burst(T0, "octo/repo", { sessionKey: "octo/repo#1" }),
        burst(T0 + SECOND, "octo/repo", { sessionKey: "octo/repo#2" }),
        burst(T0 + 2 * SECOND, "octo/repo", { sessionKey: "octo/repo#1" }),
      ]);
      const claimed = await claimAll(store, T0 + 12 * SECOND);
      assert.deepEqual(claimed, [a1, b1], "a run for each conversation");
      assert.deepEqual((await store.foldedInto(a1)).map((event) => event.id), [a2]);
      assert.deepEqual(await store.foldedInto(b1), [], "#2's event answered by its own run");
    },
  },
  {
    name: "a window's event held behind an earlier event of its conversation is not folded",
    run: async (store) => {
      const session = { sessionKey: "octo/repo#1" };
      const [lead] = await acceptAll(store, [burst(T0, "octo/repo", session)]);
      const [between] = await acceptAll(store, [
        newEvent({ receivedAtMs: T0 + SECOND, ...session }),
      ]);
      const [late] = await acceptAll(store, [burst(T0 + 2 * SECOND, "octo/repo", session)]);
      assert.deepEqual(
        await claimAll(store, T0 + 12 * SECOND),
        [lead],
        "the others wait their turn",
      );
      assert.deepEqual(await store.foldedInto(lead), [], "not answered before the one between");
      await store.markDelivered(lead, T0 + 13 * SECOND);
      assert.deepEqual(await claimAll(store, T0 + 14 * SECOND), [between]);
      await store.markDelivered(between, T0 + 15 * SECOND);
      assert.deepEqual(await claimAll(store, T0 + 16 * SECOND), [late], "then the last, in order");
    },
  },
  {
    name: "a run that failed fails its folded events; a retry keeps them and folds no more",
    run: async (store) => {
      const ids = await acceptAll(store, [burst(T0), burst(T0 + SECOND)]);
      const [run] = await store.claimDue(T0 + 11 * SECOND, 8);
      await store.markRetry(run.id, {
        error: "HTTP 500",
        step: "agent",
        nextAttemptAtMs: T0 + 30 * SECOND,
        nowMs: T0 + 12 * SECOND,
      });
      const [later] = await acceptAll(store, [burst(T0 + 25 * SECOND)]);
      const [retry] = await store.claimDue(T0 + 30 * SECOND, 8);
      assert.equal(retry.id, run.id);
      assert.deepEqual((await store.foldedInto(run.id)).map((event) => event.id), [ids[1]]);
      await store.markFailed(run.id, { error: "HTTP 500", step: "agent", nowMs: T0 + 31 * SECOND });
      const folded = (await store.getEvent(ids[1]))!;
      assert.equal(folded.status, "failed");
      assert.match(folded.lastError ?? "", new RegExp(`the run of ${run.id}.*HTTP 500`));
      assert.equal((await store.getEvent(later))!.status, "queued", "a window of its own");
      assert.equal(await store.nextDueAtMs(), T0 + 35 * SECOND);
    },
  },
  {
    name: "a crash during a window or a run loses no event and runs none twice",
    onPlace: async (place) => {
      const first = await place.open();
      const ids = await acceptAll(first, [burst(T0), burst(T0 + SECOND), burst(T0 + 2 * SECOND)]);
      await first.close(); // killed during the window
      const second = await place.open();
      assert.equal(await second.nextDueAtMs(), T0 + 12 * SECOND, "the window survives");
      const [run] = await second.claimDue(T0 + 12 * SECOND, 8);
      await second.close(); // killed during the run
      const third = await place.open();
      try {
        assert.equal(
          await third.recoverInterrupted(T0 + 20 * SECOND),
          1,
          "only the run is requeued",
        );
        const claimed = await third.claimDue(T0 + 20 * SECOND, 8);
        assert.deepEqual(claimed.map((event) => event.id), [run.id]);
        assert.deepEqual((await third.foldedInto(run.id)).map((event) => event.id), ids.slice(1));
        await third.markDelivered(run.id, T0 + 21 * SECOND);
        for (const id of ids) assert.equal((await third.getEvent(id))?.status, "delivered");
      } finally {
        await third.close();
      }
    },
  },
];
