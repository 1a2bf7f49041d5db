/**
 * Conformance: direct-mode deliveries as the store records them, the parts a retry or a replay
 * resumes after, and who holds a direct message's delivery id.
 *
 * @module
 */
import assert from "node:assert/strict";
import { newEvent } from "../_fixtures.ts";
import type { Case } from "./_suite.ts";

const T0 = 1_700_000_000_000;

/** Ids `evt_0`, `evt_1`, ... in order, from a fresh generator. */
function sequentialIds(): () => string {
  let next = 0;
  return () => `evt_${next++}`;
}

/** The cases of the direct path's methods and of replaying direct messages. */
export const directCases: Case[] = [
  {
    name: "keyHolder() and recordDirect() leave a failed direct delivery retryable",
    options: {
      now: () => T0,
      idempotencyTtlSeconds: 60,
    },
    run: async (store) => {
      const now = T0;
      const event = newEvent({ mode: "direct", deliveryId: "dd", receivedAtMs: now });
      assert.equal(await store.keyHolder("gh", "dd", now) !== null, false);
      const failedId = await store.recordDirect(event, {
        delivered: false,
        error: "502",
        partsSent: 0,
      });
      assert.equal(await store.keyHolder("gh", "dd", now) !== null, false);
      const deliveredId = await store.recordDirect(event, { delivered: true, partsSent: 1 });
      assert.equal(await store.keyHolder("gh", "dd", now) !== null, true);
      assert.equal(await store.keyHolder("other", "dd", now) !== null, false);
      assert.equal(
        await store.keyHolder("gh", "dd", now + 60_000) !== null,
        false,
        "expired after the TTL",
      );
      assert.equal((await store.getEvent(failedId))?.status, "failed");
      assert.equal((await store.getEvent(failedId))?.lastError, "502");
      assert.equal((await store.getEvent(deliveredId))?.status, "delivered");
      assert.equal((await store.getEvent(deliveredId))?.partsSent, 1);
      const attempts = (await store.attempts(failedId)).map((a) => [a.step, a.error]);
      assert.deepEqual(attempts, [["delivery", "502"]]);
    },
  },
  {
    name:
      "recordDirectProgress() puts a direct message's parts on record as it goes; recordDirect() then records its outcome on the same event",
    options: { idempotencyTtlSeconds: 60, now: () => T0 + 5 },
    run: async (store) => {
      const event = newEvent({ mode: "direct", deliveryId: "long", receivedAtMs: T0 });
      const id = await store.recordDirectProgress(event, 1);
      assert.equal(await store.recordDirectProgress(event, 2, id), id);
      assert.equal(await store.partsSentByFailedAttempts({ ...event, receivedAtMs: T0 + 1 }), 2);
      assert.equal(
        await store.keyHolder("gh", "long", T0 + 1),
        null,
        "the sender's retry goes through",
      );
      assert.match((await store.getEvent(id))!.lastError ?? "", /interrupted: the gateway stopped/);

      assert.equal(
        await store.recordDirect(event, { delivered: true, partsSent: 3, progressId: id }),
        id,
      );
      const done = (await store.getEvent(id))!;
      assert.deepEqual([done.status, done.partsSent, done.lastError], ["delivered", 3, null]);
      assert.equal(await store.keyHolder("gh", "long", T0 + 6), id);
      assert.deepEqual((await store.attempts(id)).map((a) => [a.finishedAtMs, a.error]), [[
        T0 + 5,
        null,
      ]]);
      assert.equal((await store.listEvents({})).length, 1, "one event, not two");

      // Replayed while it was being sent: the outcome is recorded on its own.
      const other = newEvent({ mode: "direct", deliveryId: "other", receivedAtMs: T0 });
      const progress = await store.recordDirectProgress(other, 1);
      await store.replay(progress, T0 + 2);
      const outcome = await store.recordDirect(other, {
        delivered: false,
        error: "502",
        partsSent: 1,
        progressId: progress,
      });
      assert.notEqual(outcome, progress);
      assert.equal((await store.getEvent(progress))!.status, "queued", "the replay's, untouched");
    },
  },
  {
    name:
      "partsSentByFailedAttempts() counts the parts failed direct attempts of the same message delivered",
    options: { idempotencyTtlSeconds: 60 },
    run: async (store) => {
      const event = newEvent({
        mode: "direct",
        deliveryId: "dd",
        prompt: "a long message",
        route: { deliver: "telegram", chatId: "1", skills: [] },
        receivedAtMs: T0,
      });
      const retry = { ...event, receivedAtMs: T0 + 30_000 };
      assert.equal(await store.partsSentByFailedAttempts(retry), 0, "never tried");
      await store.recordDirect(event, { delivered: false, error: "502", partsSent: 0 });
      assert.equal(await store.partsSentByFailedAttempts(retry), 0, "nothing went out");
      await store.recordDirect(event, { delivered: false, error: "502 on part 2", partsSent: 1 });
      await store.recordDirect(event, { delivered: false, error: "502 on part 3", partsSent: 2 });
      assert.equal(await store.partsSentByFailedAttempts(retry), 2);
      assert.equal(
        await store.partsSentByFailedAttempts({ ...retry, prompt: "an edited message" }),
        0,
        "text",
      );
      const discord = { deliver: "discord", chatId: "1", skills: [] };
      assert.equal(
        await store.partsSentByFailedAttempts({ ...retry, route: discord }),
        0,
        "another target",
      );
      const chat2 = { deliver: "telegram", chatId: "2", skills: [] };
      assert.equal(
        await store.partsSentByFailedAttempts({ ...retry, route: chat2 }),
        0,
        "another chat",
      );
      assert.equal(
        await store.partsSentByFailedAttempts({ ...retry, subscription: "other" }),
        0,
        "subscription",
      );
      assert.equal(
        await store.partsSentByFailedAttempts({ ...retry, deliveryId: "other" }),
        0,
        "delivery id",
      );
      assert.equal(
        await store.partsSentByFailedAttempts({ ...retry, receivedAtMs: T0 + 60_000 }),
        0,
        "the delivery id has expired: a new message",
      );
    },
  },
  {
    name:
      "resumeAfter() of a direct message is the most parts any failed attempt at it got out, until it is delivered",
    options: { idempotencyTtlSeconds: 60 },
    run: async (store) => {
      const route = { deliver: "telegram", chatId: "1", skills: [] };
      const event = newEvent({
        mode: "direct",
        deliveryId: "r",
        prompt: "long",
        route,
        receivedAtMs: T0,
      });
      const id = await store.recordDirect(event, { delivered: false, error: "502", partsSent: 2 });
      await store.recordDirect({ ...event, receivedAtMs: T0 + 1 }, {
        delivered: false,
        error: "502",
        partsSent: 3,
      });
      assert.equal(
        await store.resumeAfter((await store.getEvent(id))!),
        3,
        "the sender's retry got further",
      );
      assert.equal(await store.wasDelivered(id), false);
      assert.equal(
        (await store.replay(id, T0 + 2)).partsSent,
        3,
        "the replay resumes after them too",
      );
      await store.claimDue(T0 + 2, 1);
      await store.markDelivered(id, T0 + 3);
      assert.equal(await store.wasDelivered(id), true);
      await store.recordDirect({ ...event, receivedAtMs: T0 + 4 }, {
        delivered: false,
        error: "502",
        partsSent: 5,
      });
      assert.equal(
        await store.resumeAfter((await store.getEvent(id))!),
        3,
        "delivered: sent again from its own count",
      );
      await store.replay(id, T0 + 5);
      assert.equal(
        await store.wasDelivered(id),
        true,
        "ever delivered, while a replay is under way",
      );
    },
  },
  {
    name:
      "replay() of a direct message cut off mid-way keeps its parts sent only when sent the same way",
    run: async (store) => {
      const route = { deliver: "telegram", chatId: "1", skills: [] };
      const event = newEvent({ mode: "direct", prompt: "long", route, receivedAtMs: T0 });
      const id = await store.recordDirect(event, { delivered: false, error: "502", partsSent: 2 });
      assert.equal((await store.replay(id, T0 + 1)).partsSent, 2, "the replay sends the rest");
      await store.claimDue(T0 + 1, 1);
      await store.markFailed(id, { error: "502 again", step: "delivery", nowMs: T0 + 2 });
      const edited = await store.replay(
        id,
        T0 + 3,
        () => ({ mode: "direct", prompt: "edited", route }),
      );
      assert.equal(edited.partsSent, 0, "another text starts from the first part");
      await store.claimDue(T0 + 3, 1);
      await store.savePartsSent(id, 2, { sentBefore: 0, parts: 9 });
      await store.markFailed(id, { error: "502 again", step: "delivery", nowMs: T0 + 4 });
      const discord = { deliver: "discord", chatId: "1", skills: [] };
      const moved = await store.replay(
        id,
        T0 + 5,
        () => ({ mode: "direct", prompt: "edited", route: discord }),
      );
      assert.equal(moved.partsSent, 0, "another target starts from the first part");
      await store.claimDue(T0 + 5, 1);
      await store.savePartsSent(id, 3, { sentBefore: 0, parts: 9 });
      await store.markDelivered(id, T0 + 6);
      assert.equal(
        (await store.replay(id, T0 + 7)).partsSent,
        0,
        "a delivered message is sent whole again",
      );
    },
  },
  {
    name:
      "markDelivered() of a replayed direct message takes its delivery id, so the sender's retry is a duplicate",
    options: { idempotencyTtlSeconds: 60 },
    run: async (store) => {
      const event = newEvent({ mode: "direct", deliveryId: "rp1", receivedAtMs: T0 });
      const id = await store.recordDirect(event, { delivered: false, error: "502", partsSent: 1 });
      assert.equal(await store.keyHolder(event.subscription, "rp1", T0 + 1) !== null, false);
      await store.replay(id, T0 + 1);
      await store.claimDue(T0 + 1, 1);
      await store.markDelivered(id, T0 + 2);
      assert.equal(await store.keyHolder(event.subscription, "rp1", T0 + 3) !== null, true);
      assert.equal(
        await store.keyHolder(event.subscription, "rp1", T0 + 2 + 60_000) !== null,
        false,
        "for the TTL",
      );
    },
  },
  {
    name: "markDelivered() leaves a delivery id's key with the event that holds it unexpired",
    options: () => ({ idempotencyTtlSeconds: 60, newId: sequentialIds() }),
    run: async (store) => {
      const event = newEvent({ mode: "direct", deliveryId: "k", receivedAtMs: T0 });
      const failed = await store.recordDirect(event, {
        delivered: false,
        error: "502",
        partsSent: 0,
      });
      await store.replay(failed, T0 + 1);
      await store.claimDue(T0 + 1, 1);
      // The sender's retry is delivered while the replay runs, and takes the key over.
      const delivered = await store.recordDirect(event, { delivered: true, partsSent: 1 });
      await store.markDelivered(failed, T0 + 2);
      // Any key, expired or not: the replayed event holds none.
      assert.equal(await store.keyHolder(event.subscription, "k"), delivered);
    },
  },
  {
    name:
      "replay() of a direct message takes its delivery id at once, so a retry while it waits is a duplicate",
    options: { idempotencyTtlSeconds: 60 },
    run: async (store) => {
      const event = newEvent({ mode: "direct", deliveryId: "waiting", receivedAtMs: T0 });
      const id = await store.recordDirect(event, { delivered: false, error: "502", partsSent: 0 });
      await store.replay(id, T0 + 1);
      assert.equal((await store.getEvent(id))?.status, "queued");
      assert.equal(await store.keyHolder(event.subscription, "waiting", T0 + 2), id);
      assert.equal(await store.keyHolder(event.subscription, "waiting", T0 + 2) !== null, true);
    },
  },
];
