/**
 * Conformance: the listing the dashboard pages through (`listEvents` with an event type, a
 * delivery id and a cursor), as `lib/state/mod.ts` documents `EventFilter`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { newEvent } from "../_fixtures.ts";
import type { Case } from "./_suite.ts";

const T0 = 1_700_000_000_000;
const DAY_MS = 86_400_000;

/** A fresh generator of these ids, in this order. */
function idsInOrder(ids: string[]): () => string {
  let next = 0;
  return () => ids[next++];
}

/** The ids a listing gives, in its order. */
const idsOf = (events: { id: string }[]) => events.map((event) => event.id);

/** The cases of `listEvents()` with `eventType`, `deliveryId` and `beforeId`. */
export const listingCases: Case[] = [
  {
    name: "listEvents() filters by event type, a label or the type before its dot",
    options: () => ({ newId: idsInOrder(["evt_a1", "evt_a2", "evt_a3", "evt_a4"]) }),
    run: async (store) => {
      for (const eventLabel of ["issues.opened", "issues", "issues_comment.created", "push"]) {
        await store.accept(newEvent({ eventLabel }));
      }
      assert.deepEqual(idsOf(await store.listEvents({ eventType: "issues" })), [
        "evt_a2",
        "evt_a1",
      ]);
      assert.deepEqual(idsOf(await store.listEvents({ eventType: "issues.opened" })), ["evt_a1"]);
      assert.deepEqual(idsOf(await store.listEvents({ eventType: "issue" })), []);
      assert.deepEqual(idsOf(await store.listEvents({ eventType: "issues_comment" })), ["evt_a3"]);
    },
  },
  {
    name: "listEvents() filters by delivery id, exactly, with the other filters",
    options: () => ({ newId: idsInOrder(["evt_a1", "evt_a2", "evt_a3"]) }),
    run: async (store) => {
      await store.accept(newEvent({ deliveryId: "d-1" }));
      await store.accept(newEvent({ deliveryId: "d-1", subscription: "other" }));
      await store.accept(newEvent({ deliveryId: "d-10" }));
      assert.deepEqual(idsOf(await store.listEvents({ deliveryId: "d-1" })), ["evt_a2", "evt_a1"]);
      assert.deepEqual(
        idsOf(
          await store.listEvents({ deliveryId: "d-1", subscription: "gh", eventType: "issues" }),
        ),
        ["evt_a1"],
      );
      assert.deepEqual(idsOf(await store.listEvents({ deliveryId: "d" })), []);
    },
  },
  {
    name: "listEvents() pages by cursor: the events accepted before beforeId, newest first",
    run: async (store) => {
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) {
        const subscription = i % 2 === 0 ? "even" : "odd";
        ids.push((await store.accept(newEvent({ subscription, receivedAtMs: T0 + i }))).eventId!);
      }
      const first = await store.listEvents({ limit: 3 });
      assert.deepEqual(idsOf(first), [ids[6], ids[5], ids[4]]);
      const second = await store.listEvents({ limit: 3, beforeId: first.at(-1)!.id });
      assert.deepEqual(idsOf(second), [ids[3], ids[2], ids[1]]);
      assert.deepEqual(idsOf(await store.listEvents({ limit: 3, beforeId: ids[1] })), [ids[0]]);
      assert.deepEqual(idsOf(await store.listEvents({ limit: 3, beforeId: ids[0] })), []);
      assert.deepEqual(
        idsOf(await store.listEvents({ subscription: "even", beforeId: ids[4] })),
        [ids[2], ids[0]],
      );
      await store.claimDue(T0 + 100, 7);
      assert.deepEqual(
        idsOf(await store.listEvents({ status: "running", beforeId: ids[2], limit: 10 })),
        [ids[1], ids[0]],
      );
    },
  },
  {
    name: "listEvents() pages on from a cursor whose event was pruned meanwhile, by id order",
    options: () => ({ newId: idsInOrder(["evt_a1", "evt_a2", "evt_a3"]) }),
    run: async (store) => {
      await store.accept(newEvent({ receivedAtMs: T0 }));
      await store.recordDirect(newEvent({ mode: "direct", receivedAtMs: T0 }), {
        delivered: true,
        partsSent: 1,
        atMs: T0,
      });
      await store.accept(newEvent({ receivedAtMs: T0 + 30 * DAY_MS }));
      assert.equal((await store.prune(T0 + 30 * DAY_MS, { retentionDays: 7 })).events, 1);
      assert.equal(await store.getEvent("evt_a2"), null, "the cursor's event is gone");
      assert.deepEqual(idsOf(await store.listEvents({ beforeId: "evt_a2" })), ["evt_a1"]);
      assert.deepEqual(idsOf(await store.listEvents({ beforeId: "evt_z" })), ["evt_a3", "evt_a1"]);
    },
  },
];
