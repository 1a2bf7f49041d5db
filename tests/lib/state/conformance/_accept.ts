/**
 * Conformance: accepting agent-mode events, their delivery ids' idempotency keys, and what a
 * store promises about commits and closing.
 *
 * @module
 */
import assert from "node:assert/strict";
import { StoreUnavailableError } from "../../../../lib/errors.ts";
import { newEvent } from "../_fixtures.ts";
import type { Case } from "./_suite.ts";

/** The cases of `accept()`, `keyHolder()` for accepted events, and `close()`. */
export const acceptCases: Case[] = [
  {
    name: "accept() persists an event that is still there after close and reopen",
    onPlace: async (place) => {
      const store = await place.open();
      const event = newEvent({ route: { deliver: "telegram", chatId: "42", skills: ["a", "b"] } });
      const result = await store.accept(event);
      assert.equal(result.status, "accepted");
      await store.close();

      const reopened = await place.open();
      const stored = await reopened.getEvent(result.eventId!);
      await reopened.close();
      assert.ok(stored);
      assert.equal(stored.status, "queued");
      assert.equal(stored.attempts, 0);
      assert.equal(stored.nextAttemptAtMs, event.receivedAtMs);
      assert.deepEqual(stored.route, event.route);
      assert.equal(stored.payload, event.payload);
      assert.equal(stored.prompt, event.prompt);
      assert.equal(stored.dedupe, true);
      assert.equal(stored.source, "github");
    },
  },
  {
    name: "accept() makes event ids of 20 characters that sort in acceptance order",
    run: async (store) => {
      const ids: string[] = [];
      for (let i = 0; i < 50; i++) {
        const result = await store.accept(newEvent());
        assert.equal(result.status, "accepted");
        ids.push(result.eventId!);
      }
      assert.ok(ids.every((id) => /^evt_[0-9a-z]{16}$/.test(id)), ids[0]);
      assert.deepEqual([...ids].sort(), ids);
    },
  },
  {
    name: "accept() answers duplicate with the first event id for a delivery id seen before",
    run: async (store) => {
      const first = await store.accept(newEvent({ deliveryId: "d-1" }));
      const again = await store.accept(
        newEvent({ deliveryId: "d-1", receivedAtMs: 1_700_000_001_000 }),
      );
      assert.equal(first.status, "accepted");
      assert.deepEqual(again, { status: "duplicate", eventId: first.eventId });
      assert.equal((await store.listEvents({})).length, 1);
    },
  },
  {
    name: "accept() scopes delivery ids per subscription",
    run: async (store) => {
      const a = await store.accept(newEvent({ subscription: "a", deliveryId: "same" }));
      const b = await store.accept(newEvent({ subscription: "b", deliveryId: "same" }));
      assert.equal(a.status, "accepted");
      assert.equal(b.status, "accepted");
      // Both stored, each under its subscription: an accepted event that was not inserted
      // would be a 202 for an event that is lost.
      assert.equal((await store.getEvent(a.eventId))?.subscription, "a");
      assert.equal((await store.getEvent(b.eventId))?.subscription, "b");
      assert.equal((await store.listEvents({})).length, 2);
    },
  },
  {
    name:
      "accept() of two copies of one delivery id at once stores one, the other a duplicate of it",
    run: async (store) => {
      const results = await Promise.all([
        await store.accept(newEvent({ deliveryId: "twin" })),
        await store.accept(newEvent({ deliveryId: "twin" })),
      ]);
      assert.equal(results[0].status, "accepted");
      assert.deepEqual(results[1], { status: "duplicate", eventId: results[0].eventId });
      assert.equal((await store.listEvents({})).length, 1);
    },
  },
  {
    name: "accept() accepts a delivery id again once its key is older than the TTL",
    options: {
      idempotencyTtlSeconds: 60,
    },
    run: async (store) => {
      const t0 = 1_700_000_000_000;
      await store.accept(newEvent({ deliveryId: "d", receivedAtMs: t0 }));
      const inside = await store.accept(newEvent({ deliveryId: "d", receivedAtMs: t0 + 59_999 }));
      const after = await store.accept(newEvent({ deliveryId: "d", receivedAtMs: t0 + 60_000 }));
      assert.equal(inside.status, "duplicate");
      assert.equal(after.status, "accepted");
      const later = await store.accept(newEvent({ deliveryId: "d", receivedAtMs: t0 + 61_000 }));
      assert.deepEqual(later, { status: "duplicate", eventId: after.eventId });
    },
  },
  {
    name: "accept() never deduplicates events whose delivery id was generated",
    run: async (store) => {
      const one = await store.accept(newEvent({ deliveryId: "gen", dedupe: false }));
      const two = await store.accept(newEvent({ deliveryId: "gen", dedupe: false }));
      assert.equal(one.status, "accepted");
      assert.equal(two.status, "accepted");
      assert.equal(await store.keyHolder("gh", "gen", 1_700_000_000_000) !== null, false);
    },
  },
  {
    name: "accept() rejects with StoreUnavailableError once the store is closed",
    onPlace: async (place) => {
      const store = await place.open();
      await store.close();
      await assert.rejects(store.accept(newEvent()), StoreUnavailableError);
      await assert.rejects(async () => await store.claimDue(Date.now(), 1), StoreUnavailableError);
    },
  },
  {
    name: "close() commits the batch that is still pending",
    onPlace: async (place) => {
      const store = await place.open();
      const pending = await store.accept(newEvent({ deliveryId: "last" }));
      await store.close();
      const result = await pending;
      assert.equal(result.status, "accepted");
      const reopened = await place.open();
      assert.ok(await reopened.getEvent(result.eventId!));
      await reopened.close();
    },
  },
];
