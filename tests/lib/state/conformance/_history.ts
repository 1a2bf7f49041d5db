/**
 * Conformance: what the CLI reads and does with past events (listing, finding by id prefix,
 * replaying), and retention's pruning.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ConflictError, NotFoundError } from "../../../../lib/errors.ts";
import { newEvent } from "../_fixtures.ts";
import type { Case } from "./_suite.ts";

const T0 = 1_700_000_000_000;
const DAY_MS = 86_400_000;

/** A fresh generator of these ids, in this order. */
function idsInOrder(ids: string[]): () => string {
  let next = 0;
  return () => ids[next++];
}

/** The cases of `replay()`, `getEvent()`, `listEvents()` and `prune()`. */
export const historyCases: Case[] = [
  {
    name: "replay() starts a new attempt series for a failed event",
    run: async (store) => {
      const id = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
      await store.claimDue(T0, 1);
      await store.saveResponse(id, "old answer");
      await store.savePartsSent(id, 1, { sentBefore: 0, parts: 9 });
      await store.markFailed(id, { error: "boom", step: "delivery", nowMs: T0 + 1 });
      const replayed = await store.replay(id.slice(0, 12), T0 + 99);
      assert.equal(replayed.id, id);
      assert.equal(replayed.status, "queued");
      assert.equal(replayed.attempts, 0);
      assert.equal(replayed.response, null);
      assert.equal(replayed.partsSent, 0);
      assert.equal(replayed.lastError, null);
      assert.equal(replayed.nextAttemptAtMs, T0 + 99);
      assert.equal(replayed.replayedAtMs, T0 + 99);
      assert.equal((await store.claimDue(T0 + 99, 1))[0].attempts, 1);
      assert.equal((await store.attempts(id)).length, 2, "the first series stays in the history");
    },
  },
  {
    name: "replay() throws NotFoundError for an unknown id and ConflictError for a running event",
    run: async (store) => {
      await assert.rejects(async () => await store.replay("evt_unknown", T0), NotFoundError);
      const id = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
      await store.claimDue(T0, 1);
      await assert.rejects(async () => await store.replay(id, T0), ConflictError);
      assert.equal((await store.getEvent(id))?.status, "running");
    },
  },
  {
    name: "getEvent() finds an event by a unique id prefix and refuses an ambiguous one",
    options: () => ({ newId: idsInOrder(["evt_aaa111", "evt_aaa222", "evt_bbb333"]) }),
    run: async (store) => {
      for (let i = 0; i < 3; i++) await store.accept(newEvent());
      assert.equal((await store.getEvent("evt_bbb"))?.id, "evt_bbb333");
      assert.equal((await store.getEvent("evt_aaa222"))?.id, "evt_aaa222");
      assert.equal(await store.getEvent("evt_ccc"), null);
      assert.equal(await store.getEvent(""), null);
      await assert.rejects(async () => await store.getEvent("evt_aaa"), (error: Error) => {
        assert.ok(error instanceof NotFoundError);
        assert.match(error.message, /ambiguous.*evt_aaa111, evt_aaa222/);
        return true;
      });
    },
  },
  {
    name: "listEvents() lists newest first, filters by subscription and status, 20 by default",
    run: async (store) => {
      const ids: string[] = [];
      for (let i = 0; i < 25; i++) {
        const subscription = i % 2 === 0 ? "even" : "odd";
        ids.push((await store.accept(newEvent({ subscription, receivedAtMs: T0 + i }))).eventId!);
      }
      const all = await store.listEvents({});
      assert.equal(all.length, 20);
      assert.equal(all[0].id, ids[24]);
      assert.equal((await store.listEvents({ limit: 100 })).length, 25);
      const odd = await store.listEvents({ subscription: "odd", limit: 100 });
      assert.equal(odd.length, 12);
      assert.ok(odd.every((event) => event.subscription === "odd"));
      await store.claimDue(T0 + 100, 3);
      assert.deepEqual(
        (await store.listEvents({ status: "running" })).map((event) => event.id),
        [ids[2], ids[1], ids[0]],
      );
      assert.equal((await store.listEvents({ subscription: "even", status: "running" })).length, 2);
    },
  },
  {
    name: "listEvents() finds the few queued events among many finished ones, newest first",
    run: async (store) => {
      for (let i = 0; i < 3000; i++) {
        const event = newEvent({ mode: "direct", receivedAtMs: 1000 + i });
        if (i % 1000 === 0) await store.accept({ ...event, mode: "agent" });
        else await store.recordDirect(event, { delivered: true, partsSent: 1 });
      }
      const queued = await store.listEvents({ status: "queued" });
      assert.deepEqual(queued.map((event) => event.receivedAtMs), [3000, 2000, 1000]);
      assert.deepEqual(
        (await store.listEvents({ status: "queued", subscription: "gh" })).length,
        3,
      );
    },
  },
  {
    name: "prune() deletes old finished events with their keys, and keeps queued work",
    options: {
      idempotencyTtlSeconds: 86_400,
    },
    run: async (store) => {
      const oldDone = (await store.accept(newEvent({ deliveryId: "k1", receivedAtMs: T0 })))
        .eventId!;
      const oldQueued = (await store.accept(newEvent({ receivedAtMs: T0 + 1 }))).eventId!;
      await store.claimDue(T0, 1);
      await store.markDelivered(oldDone, T0 + 5);
      const fresh =
        (await store.accept(newEvent({ deliveryId: "k2", receivedAtMs: T0 + 9 * DAY_MS })))
          .eventId!;
      await store.claimDue(T0 + 9 * DAY_MS, 5);
      await store.markFailed(fresh, { error: "x", step: "agent", nowMs: T0 + 9 * DAY_MS });

      const result = await store.prune(T0 + 10 * DAY_MS - 1, { retentionDays: 7 });
      assert.deepEqual(result, { events: 1 });
      assert.equal(await store.getEvent(oldDone), null);
      assert.deepEqual(await store.attempts(oldDone), []);
      assert.ok(await store.getEvent(oldQueued), "running work is kept");
      assert.ok(await store.getEvent(fresh));
      assert.equal(await store.keyHolder("gh", "k2", T0 + 9 * DAY_MS + 1) !== null, true);
      assert.equal(await store.keyHolder("gh", "k1"), null, "the pruned event's key went with it");
    },
  },
  {
    name: "prune() keeps an old event replayed within the retention window as long as a new one",
    run: async (store) => {
      const old = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
      await store.claimDue(T0, 1);
      await store.markFailed(old, { error: "down", step: "agent", nowMs: T0 + 1 });
      await store.replay(old, T0 + 9 * DAY_MS); // the dead letter, replayed nine days later
      await store.claimDue(T0 + 9 * DAY_MS, 1);
      await store.markDelivered(old, T0 + 9 * DAY_MS + 1);
      assert.deepEqual(await store.prune(T0 + 10 * DAY_MS, { retentionDays: 7 }), { events: 0 });
      assert.deepEqual(await store.prune(T0 + 17 * DAY_MS, { retentionDays: 7 }), { events: 1 });
    },
  },
  {
    name: "prune() works in batches of maxRows, oldest first",
    options: { idempotencyTtlSeconds: 60 },
    run: async (store) => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const id = (await store.accept(newEvent({ deliveryId: `b${i}`, receivedAtMs: T0 + i })))
          .eventId!;
        ids.push(id);
      }
      for (const event of await store.claimDue(T0 + 10, 5)) {
        await store.markDelivered(event.id, T0 + 10);
      }
      const later = T0 + 8 * DAY_MS;
      assert.deepEqual(await store.prune(later, { retentionDays: 7, maxRows: 2 }), { events: 2 });
      assert.equal(await store.getEvent(ids[0]), null, "the oldest go first");
      assert.ok(await store.getEvent(ids[2]));
      assert.deepEqual(await store.prune(later, { retentionDays: 7, maxRows: 2 }), { events: 2 });
      assert.deepEqual(await store.prune(later, { retentionDays: 7, maxRows: 2 }), { events: 1 });
      assert.deepEqual(await store.prune(later, { retentionDays: 7, maxRows: 2 }), { events: 0 });
    },
  },
];
