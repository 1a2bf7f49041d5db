/**
 * Conformance: the worker's side of a store: claiming due events, saving an attempt's answer
 * and parts, its outcome, and the events a stop or a crash left running.
 *
 * @module
 */
import assert from "node:assert/strict";
import { NotFoundError } from "../../../../lib/errors.ts";
import { newEvent } from "../_fixtures.ts";
import type { Case } from "./_suite.ts";

const T0 = 1_700_000_000_000;

/** The cases of the methods the worker runs events with. */
export const workerCases: Case[] = [
  {
    name: "claimDue() claims due events only, marks them running and opens an attempt",
    run: async (store) => {
      const due = await store.accept(newEvent({ receivedAtMs: T0 }));
      const later = await store.accept(newEvent({ receivedAtMs: T0 + 5_000 }));
      assert.equal(await store.nextDueAtMs(), T0);
      const claimed = await store.claimDue(T0 + 1_000, 10);
      assert.deepEqual(claimed.map((event) => event.id), [due.eventId]);
      assert.equal(claimed[0].status, "running");
      assert.equal(claimed[0].attempts, 1);
      assert.equal((await store.getEvent(due.eventId!))?.status, "running");
      assert.equal((await store.getEvent(later.eventId!))?.status, "queued");
      assert.equal(await store.nextDueAtMs(), T0 + 5_000);
      assert.deepEqual(await store.attempts(due.eventId!), [
        {
          eventId: due.eventId,
          attempt: 1,
          startedAtMs: T0 + 1_000,
          finishedAtMs: null,
          step: "agent",
          error: null,
          run: null,
          answer: null,
        },
      ]);
      assert.equal(
        (await store.claimDue(T0 + 1_000, 10)).length,
        0,
        "a running event is not claimed twice",
      );
    },
  },
  {
    name: "claimDue() respects its limit and claims the earliest due first",
    run: async (store) => {
      const ids = [];
      for (const offset of [300, 100, 200]) {
        ids.push((await store.accept(newEvent({ receivedAtMs: T0 + offset }))).eventId);
      }
      const claimed = await store.claimDue(T0 + 1_000, 2);
      assert.deepEqual(claimed.map((event) => event.id), [ids[1], ids[2]]);
    },
  },
  {
    name: "claimDue() with deliveryOnly claims only events that need no agent run",
    run: async (store) => {
      const waiting = await store.accept(newEvent({ receivedAtMs: T0 }));
      const answered = await store.accept(newEvent({ receivedAtMs: T0 + 1 }));
      await store.claimDue(T0 + 1, 2); // both run; the agent answers the second, whose delivery fails
      await store.markRetry(waiting.eventId!, {
        error: "503",
        step: "agent",
        nextAttemptAtMs: T0 + 10,
        nowMs: T0 + 2,
      });
      await store.saveResponse(answered.eventId!, "All good");
      await store.markRetry(answered.eventId!, {
        error: "Telegram 502",
        step: "delivery",
        nextAttemptAtMs: T0 + 10,
        nowMs: T0 + 2,
      });
      const failedDirect = await store.recordDirect(
        newEvent({ mode: "direct", prompt: "Deploy done", receivedAtMs: T0 }),
        { delivered: false, error: "502", partsSent: 0 },
      );
      await store.replay(failedDirect, T0 + 10);
      const claimed = await store.claimDue(T0 + 10, 10, { deliveryOnly: true });
      assert.deepEqual(
        claimed.map((event) => event.id).sort(),
        [answered.eventId!, failedDirect].sort(),
      );
      assert.equal((await store.getEvent(waiting.eventId!))?.status, "queued");
      assert.deepEqual(await store.claimDue(T0 + 10, 10, { deliveryOnly: true }), []);
      assert.deepEqual((await store.claimDue(T0 + 10, 10)).map((event) => event.id), [
        waiting.eventId,
      ]);
    },
  },
  {
    name: "moveQueued() moves when every queued event is due, and no other event",
    run: async (store) => {
      const running = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
      const queued = (await store.accept(newEvent({ receivedAtMs: T0 + 5_000 }))).eventId!;
      await store.claimDue(T0, 1);
      assert.equal(await store.moveQueued(-1_000), 1);
      assert.equal(await store.nextDueAtMs(), T0 + 4_000);
      assert.equal((await store.getEvent(queued))?.nextAttemptAtMs, T0 + 4_000);
      assert.equal((await store.getEvent(running))?.nextAttemptAtMs, null);
    },
  },
  {
    name: "markRetry() requeues with the error, and markDelivered() keeps the saved response",
    run: async (store) => {
      const { eventId } = await store.accept(newEvent({ receivedAtMs: T0 }));
      const id = eventId!;
      await store.claimDue(T0, 1);
      await store.markRetry(id, {
        error: "LLM endpoint answered 503",
        step: "agent",
        nextAttemptAtMs: T0 + 10_000,
        nowMs: T0 + 50,
      });
      let event = (await store.getEvent(id))!;
      assert.equal(event.status, "queued");
      assert.equal(event.nextAttemptAtMs, T0 + 10_000);
      assert.equal(event.lastError, "LLM endpoint answered 503");
      assert.equal(await store.nextDueAtMs(), T0 + 10_000);

      const [second] = await store.claimDue(T0 + 10_000, 1);
      assert.equal(second.attempts, 2);
      await store.saveResponse(id, "All good");
      await store.savePartsSent(id, 2, { sentBefore: 0, parts: 2 });
      await store.markDelivered(id, T0 + 10_500);
      event = (await store.getEvent(id))!;
      assert.equal(event.status, "delivered");
      assert.equal(event.response, "All good");
      assert.equal(event.partsSent, 2);
      assert.equal(event.uncountedAttempts, 0, "an attempt that got the whole message out counts");
      assert.equal(event.nextAttemptAtMs, null);
      assert.deepEqual(
        (await store.attempts(id)).map((a) => [a.attempt, a.step, a.error, a.finishedAtMs]),
        [[1, "agent", "LLM endpoint answered 503", T0 + 50], [2, "delivery", null, T0 + 10_500]],
      );
    },
  },
  {
    name: "markFailed() dead-letters the event and records the step that failed",
    run: async (store) => {
      const id = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
      await store.claimDue(T0, 1);
      await store.saveResponse(id, "answer");
      await store.markFailed(id, {
        error: "Slack answered 404 channel_not_found",
        step: "delivery",
        nowMs: T0 + 10,
      });
      const event = (await store.getEvent(id))!;
      assert.equal(event.status, "failed");
      assert.equal(event.lastError, "Slack answered 404 channel_not_found");
      assert.equal((await store.attempts(id))[0].step, "delivery");
      assert.equal(await store.nextDueAtMs(), null);
      assert.equal((await store.claimDue(T0 + 100_000, 5)).length, 0);
    },
  },
  {
    name: "markDelivered() throws NotFoundError for an unknown event",
    run: async (store) => {
      await assert.rejects(async () => await store.markDelivered("evt_nope", T0), NotFoundError);
    },
  },
  {
    name: "a NUL in a prompt, an answer or an error no longer cuts what is read back there",
    run: async (store) => {
      const prompt = "Title: harmless\u0000 (rest) -- never run shell commands. END";
      const { eventId } = await store.accept(newEvent({ receivedAtMs: T0, prompt }));
      const [claimed] = await store.claimDue(T0, 1);
      assert.equal(claimed.prompt, prompt.replace("\u0000", "\uFFFD"));
      await store.saveResponse(eventId!, "first\u0000second");
      await store.markRetry(eventId!, {
        error: "bad\u0000chat id",
        step: "delivery",
        nextAttemptAtMs: T0 + 10,
        nowMs: T0,
      });
      const stored = (await store.getEvent(eventId!))!;
      assert.equal(stored.prompt, claimed.prompt);
      assert.equal(stored.response, "first\uFFFDsecond");
      assert.equal(stored.lastError, "bad\uFFFDchat id");
      assert.equal((await store.attempts(eventId!))[0].error, "bad\uFFFDchat id");
      const replayed = await store.replay(
        eventId!,
        T0 + 20,
        (event) => ({ ...event, prompt: "x\u0000y" }),
      );
      assert.equal(replayed.prompt, "x\uFFFDy");
    },
  },
  {
    name: "recoverInterrupted() requeues events left running by a crash, due now",
    onPlace: async (place) => {
      const first = await place.open();
      const a = (await first.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
      const b = (await first.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
      await first.claimDue(T0, 1);
      await first.close(); // the gateway stops while `a` runs

      const second = await place.open();
      try {
        assert.equal(await second.recoverInterrupted(T0 + 60_000), 1);
        assert.equal((await second.getEvent(a))?.status, "queued");
        assert.equal((await second.getEvent(a))?.nextAttemptAtMs, T0 + 60_000);
        assert.equal((await second.getEvent(b))?.status, "queued");
        const resumed = (await second.claimDue(T0 + 60_000, 2)).find((event) => event.id === a)!;
        assert.equal(resumed.attempts, 2, "the interrupted attempt counts");
        assert.match((await second.attempts(a))[0].error ?? "", /interrupted/);
        assert.equal(await second.recoverInterrupted(T0 + 60_000), 2, "both were claimed again");
      } finally {
        await second.close();
      }
    },
  },
  {
    name:
      "an attempt that delivered a part does not count, whether it then fails or a crash cuts it off",
    onPlace: async (place) => {
      const first = await place.open();
      const id = (await first.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
      await first.claimDue(T0, 1);
      await first.saveResponse(id, "a long answer");
      await first.savePartsSent(id, 1, { sentBefore: 0, parts: 9 });
      await first.savePartsSent(id, 2, { sentBefore: 0, parts: 9 });
      assert.equal(
        (await first.getEvent(id))?.uncountedAttempts,
        1,
        "once per attempt, not per part",
      );
      await first.markRetry(id, {
        error: "429",
        step: "delivery",
        nextAttemptAtMs: T0 + 1,
        nowMs: T0 + 1,
      });
      await first.claimDue(T0 + 1, 1);
      await first.savePartsSent(id, 2, { sentBefore: 2, parts: 9 });
      assert.equal(
        (await first.getEvent(id))?.uncountedAttempts,
        1,
        "saving what was out already is not progress",
      );
      await first.savePartsSent(id, 3, { sentBefore: 2, parts: 9 });
      await first.close(); // a crash after part 3

      const second = await place.open();
      try {
        await second.recoverInterrupted(T0 + 2);
        const event = (await second.getEvent(id))!;
        assert.equal(event.attempts - event.uncountedAttempts, 0, "neither attempt counts");
        assert.equal(event.partsSent, 3);
      } finally {
        await second.close();
      }
    },
  },
  {
    name:
      "recoverInterrupted() of one event (a graceful stop) requeues it without counting the attempt",
    run: async (store) => {
      const stopped = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
      const crashed = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
      await store.claimDue(T0, 2);
      assert.equal(await store.recoverInterrupted(T0 + 1, stopped), 1);
      assert.equal((await store.getEvent(stopped))?.status, "queued");
      assert.equal((await store.getEvent(stopped))?.uncountedAttempts, 1);
      assert.equal((await store.getEvent(crashed))?.status, "running", "only that event");
      assert.equal(await store.recoverInterrupted(T0 + 2), 1);
      assert.equal((await store.getEvent(crashed))?.uncountedAttempts, 0, "a crash still counts");
    },
  },
];
