/**
 * Conformance: what a store keeps of an event's transform (docs/subscriptions.md#transforms):
 * the JSON it printed, taken with the event at `accept()` or saved by the worker with the
 * prompt rendered from it, and cleared by a replay so that the transform runs again.
 *
 * @module
 */
import assert from "node:assert/strict";
import { NotFoundError } from "../../../../lib/errors.ts";
import type { RouteSnapshot } from "../../../../lib/state/mod.ts";
import { newEvent } from "../_fixtures.ts";
import type { Case } from "./_suite.ts";

const T0 = 1_700_000_000_000;

/** A route whose transform prints the JSON its events' prompts are rendered from. */
const ROUTE: RouteSnapshot = {
  deliver: "log",
  skills: [],
  transform: {
    command: ["jq", "-c", "{title: .issue.title}"],
    timeoutSeconds: 5,
    prompt: "{title}",
  },
};

/** The cases of `saveTransformed()` and of the transformed JSON `accept()` and `replay()` keep. */
export const transformCases: Case[] = [
  {
    name: "accept() keeps the transformed JSON and the route's transform; lineage() reads them",
    run: async (store) => {
      const event = newEvent({ route: ROUTE, transformed: '{"title":"Bug"}', prompt: "Bug" });
      const id = (await store.accept(event)).eventId!;
      const stored = (await store.lineage(id))!.event;
      assert.equal(stored.transformed, '{"title":"Bug"}');
      assert.deepEqual(stored.route.transform, ROUTE.transform);
      const plain = (await store.accept(newEvent())).eventId!;
      assert.equal((await store.lineage(plain))!.event.transformed, undefined);
    },
  },
  {
    name: "saveTransformed() saves a pending transform's JSON with the prompt rendered from it",
    run: async (store) => {
      const id = (await store.accept(newEvent({ route: ROUTE, prompt: "", receivedAtMs: T0 })))
        .eventId!;
      const [claimed] = await store.claimDue(T0, 1);
      assert.equal(claimed.transformed, undefined, "pending until saved");
      await store.saveTransformed(id, '{"title":"Bug"}', "Bug\0");
      const saved = (await store.lineage(id))!.event;
      assert.equal(saved.transformed, '{"title":"Bug"}');
      assert.equal(saved.prompt, "Bug\uFFFD");
      await assert.rejects(
        async () => await store.saveTransformed("evt_missing", "{}", "x"),
        NotFoundError,
      );
    },
  },
  {
    name: "replay() clears the transformed JSON, so that the transform runs again",
    run: async (store) => {
      const event = newEvent({ route: ROUTE, transformed: '{"title":"Bug"}', receivedAtMs: T0 });
      const id = (await store.accept(event)).eventId!;
      await store.claimDue(T0, 1);
      await store.markDelivered(id, T0 + 1);
      const replayed = await store.replay(id, T0 + 2);
      assert.equal(replayed.transformed, undefined);
      assert.equal((await store.lineage(id))!.event.transformed, undefined);
    },
  },
];
