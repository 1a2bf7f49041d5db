/**
 * Conformance: what an event's lineage tells of its routing: the events folded into its agent
 * run (docs/subscriptions.md#coalescing), and its conversation's earlier turns and whether its
 * own is held (docs/subscriptions.md#conversations), as the event's page and `webhook show`
 * show them.
 *
 * @module
 */
import assert from "node:assert/strict";
import { newEvent } from "../_fixtures.ts";
import type { Case } from "./_suite.ts";

const T0 = 1_700_000_000_000;
const SECOND = 1000;

/** The cases of the lineage's `folded` and `conversation`. */
export const lineageRoutingCases: Case[] = [
  {
    name: "lineage() lists the events folded into a run, in the order they arrived",
    run: async (store) => {
      const coalesce = { key: "octo/repo#1", windowSeconds: 10, maxSeconds: 60 };
      const route = { deliver: "log", skills: [], coalesce };
      const ids: string[] = [];
      for (const offset of [0, 1, 2]) {
        const event = newEvent({ receivedAtMs: T0 + offset * SECOND, route });
        ids.push((await store.accept(event)).eventId!);
      }
      const [run] = await store.claimDue(T0 + 12 * SECOND, 8);
      assert.equal(run.id, ids[0]);
      const lineage = (await store.lineage(run.id))!;
      assert.deepEqual(lineage.folded?.map((event) => event.id), ids.slice(1));
      assert.deepEqual((await store.lineage(ids[1]))?.folded, [], "a folded event folds none");
      const alone = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
      assert.deepEqual((await store.lineage(alone))?.folded, []);
      assert.equal((await store.lineage(alone))?.conversation, undefined, "no conversation");
    },
  },
  {
    name: "lineage() gives a conversation's turns before the event's own, and whether it is held",
    run: async (store) => {
      const accept = async (prompt: string) =>
        (await store.accept(newEvent({ receivedAtMs: T0, prompt, sessionKey: "k" }))).eventId!;
      const first = await accept("first prompt");
      const second = await accept("second prompt");
      const third = await accept("third prompt");
      await store.claimDue(T0 + SECOND, 8);
      await store.saveResponse(first, "first answer");
      await store.markDelivered(first, T0 + 2 * SECOND);
      await store.claimDue(T0 + 3 * SECOND, 8);
      await store.saveResponse(second, "second answer");

      const ofFirst = (await store.lineage(first))!.conversation!;
      assert.deepEqual(ofFirst, { earlierTurns: [], ownTurn: true });
      const ofSecond = (await store.lineage(second))!.conversation!;
      assert.equal(ofSecond.ownTurn, true);
      assert.deepEqual(
        ofSecond.earlierTurns.map((turn) => [turn.eventId, turn.prompt, turn.answer]),
        [[first, "first prompt", "first answer"]],
        "the turns before its own, not its own",
      );
      const ofThird = (await store.lineage(third))!.conversation!;
      assert.equal(ofThird.ownTurn, false, "it has not run yet");
      assert.deepEqual(ofThird.earlierTurns.map((turn) => turn.answer), [
        "first answer",
        "second answer",
      ]);
    },
  },
];
