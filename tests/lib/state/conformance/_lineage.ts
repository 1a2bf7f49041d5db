/**
 * Conformance: what an event's lineage holds, as `lineage()` reads it back: the request's
 * headers and scheme, each attempt's agent run and answer, and the receipts of the parts
 * delivered, for the worker's events and for direct deliveries.
 *
 * @module
 */
import assert from "node:assert/strict";
import { NotFoundError } from "../../../../lib/errors.ts";
import type { AgentRun, PartReceipt } from "../../../../lib/state/mod.ts";
import { newEvent } from "../_fixtures.ts";
import type { Case } from "./_suite.ts";

const T0 = 1_700_000_000_000;

const HEADERS = {
  "content-type": "application/json",
  "x-github-event": "issues",
  "x-hub-signature-256": "[redacted]",
};

const RUN: AgentRun = {
  provider: "openai",
  model: "gpt-4o-mini-2024-07-18",
  promptTokens: 812,
  completionTokens: 96,
  durationMs: 2_345,
};

/** The receipt of part `part` of `parts`, sent to Telegram chat 42 at `sentAtMs`. */
function receipt(part: number, parts: number, sentAtMs: number): PartReceipt {
  return {
    part,
    parts,
    target: "telegram",
    chat: "42",
    messageId: String(100 + part),
    url: null,
    sentAtMs,
  };
}

/** The cases of `lineage()` and of what the writes it reads keep. */
export const lineageCases: Case[] = [
  {
    name: "lineage() reads back the headers, scheme, agent run, answer and parts of an event",
    run: async (store) => {
      const event = newEvent({ receivedAtMs: T0, headers: HEADERS, scheme: "github" });
      const id = (await store.accept(event)).eventId!;
      await store.claimDue(T0, 1);
      await store.saveResponse(id, "Looks like a duplicate of #12.", RUN);
      await store.savePartsSent(id, 1, {
        sentBefore: 0,
        parts: 2,
        receipts: [receipt(1, 2, T0 + 10)],
      });
      await store.savePartsSent(id, 2, {
        sentBefore: 0,
        parts: 2,
        receipts: [receipt(2, 2, T0 + 20)],
      });
      await store.markDelivered(id, T0 + 30);
      const lineage = (await store.lineage(id.slice(0, 14)))!;
      assert.equal(lineage.event.id, id);
      assert.deepEqual(lineage.event.headers, HEADERS);
      assert.equal(lineage.event.scheme, "github");
      assert.equal(lineage.attempts.length, 1);
      assert.deepEqual(lineage.attempts[0].run, RUN);
      assert.equal(lineage.attempts[0].answer, "Looks like a duplicate of #12.");
      assert.equal(lineage.attempts[0].step, "delivery");
      assert.deepEqual(lineage.parts, [receipt(1, 2, T0 + 10), receipt(2, 2, T0 + 20)]);
      assert.deepEqual((await store.getEvent(id))?.headers, HEADERS, "getEvent() has them too");
      assert.deepEqual((await store.attempts(id))[0].run, RUN, "attempts() has the run too");
    },
  },
  {
    name: "lineage() keeps every series' run and answer after a replay",
    run: async (store) => {
      const id = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
      await store.claimDue(T0, 1);
      await store.saveResponse(id, "first answer", RUN);
      await store.savePartsSent(id, 1, {
        sentBefore: 0,
        parts: 1,
        receipts: [receipt(1, 1, T0 + 1)],
      });
      await store.markDelivered(id, T0 + 2);
      await store.replay(id, T0 + 100);
      await store.claimDue(T0 + 100, 1);
      const second = { ...RUN, model: "other-model", promptTokens: 5, completionTokens: 1 };
      await store.saveResponse(id, "second answer", second);
      await store.markFailed(id, { error: "Telegram 403", step: "delivery", nowMs: T0 + 101 });
      const lineage = (await store.lineage(id))!;
      assert.equal(lineage.event.response, "second answer");
      assert.deepEqual(lineage.attempts.map((a) => [a.answer, a.run?.model, a.error]), [
        ["first answer", RUN.model, null],
        ["second answer", "other-model", "Telegram 403"],
      ]);
      assert.deepEqual(lineage.parts, [receipt(1, 1, T0 + 1)], "the first series' part stays");
    },
  },
  {
    name: "saveResponse() without a run, and an event without headers, read back without them",
    run: async (store) => {
      const id = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
      await store.claimDue(T0, 1);
      await store.saveResponse(id, "answer");
      const lineage = (await store.lineage(id))!;
      assert.equal(lineage.event.headers, undefined);
      assert.equal(lineage.event.scheme, undefined);
      assert.equal(lineage.attempts[0].run, null);
      assert.equal(lineage.attempts[0].answer, "answer");
      assert.deepEqual(lineage.parts, []);
    },
  },
  {
    name: "recordDirect() keeps the request's headers and the receipts of the parts it got out",
    options: { now: () => T0 + 5 },
    run: async (store) => {
      const event = newEvent({ mode: "direct", headers: HEADERS, scheme: "gitlab" });
      const delivered = await store.recordDirect(event, {
        delivered: true,
        partsSent: 1,
        receipts: [receipt(1, 1, T0 + 1)],
      });
      assert.deepEqual((await store.lineage(delivered))?.parts, [receipt(1, 1, T0 + 1)]);
      assert.equal((await store.lineage(delivered))?.event.scheme, "gitlab");
      // A long message on record part by part, then failed: its outcome carries the receipts.
      const long = newEvent({ mode: "direct", deliveryId: "long" });
      const progress = await store.recordDirectProgress(long, 1);
      const failed = await store.recordDirect(long, {
        delivered: false,
        error: "502 on part 3",
        partsSent: 2,
        progressId: progress,
        receipts: [receipt(1, 3, T0 + 1), receipt(2, 3, T0 + 2)],
      });
      assert.equal(failed, progress);
      assert.deepEqual((await store.lineage(failed))?.parts.map((part) => part.messageId), [
        "101",
        "102",
      ]);
    },
  },
  {
    name: "lineage() is null for an unknown id and throws NotFoundError for an ambiguous prefix",
    options: () => {
      const ids = ["evt_aaa111", "evt_aaa222"];
      return { newId: () => ids.shift()! };
    },
    run: async (store) => {
      await store.accept(newEvent());
      await store.accept(newEvent());
      assert.equal(await store.lineage("evt_zzz"), null);
      assert.equal(await store.lineage(""), null);
      await assert.rejects(async () => await store.lineage("evt_aaa"), NotFoundError);
      assert.equal((await store.lineage("evt_aaa2"))?.event.id, "evt_aaa222");
    },
  },
  {
    // An id used again (as a backend restored from a backup might) finds nothing left over.
    name: "prune() deletes an event's lineage with it",
    options: () => ({ newId: () => "evt_reused" }),
    run: async (store) => {
      const id = (await store.accept(newEvent({ receivedAtMs: T0, headers: HEADERS }))).eventId!;
      await store.claimDue(T0, 1);
      await store.saveResponse(id, "answer", RUN);
      await store.savePartsSent(id, 1, {
        sentBefore: 0,
        parts: 1,
        receipts: [receipt(1, 1, T0 + 1)],
      });
      await store.markDelivered(id, T0 + 2);
      const nowMs = T0 + 8 * 86_400_000;
      assert.deepEqual(await store.prune(nowMs, { retentionDays: 7 }), { events: 1 });
      assert.equal(await store.lineage(id), null);
      await store.accept(newEvent({ receivedAtMs: nowMs }));
      assert.deepEqual((await store.lineage(id))?.parts, [], "no part of the pruned event is left");
      assert.deepEqual((await store.lineage(id))?.attempts, []);
    },
  },
];
