/**
 * Several gateways on one PostgreSQL database: each test opens two stores on one database, as
 * two `gateway run` processes would, and checks what sharing promises (docs/scaling.md): one
 * event per delivery id, no event claimed twice, and the events of a gateway that died claimed
 * again once its lease ends, its late outcome recording nothing.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ConflictError } from "../../../../lib/errors.ts";
import { newEvent } from "../_fixtures.ts";
import { fileServer, withSchema } from "./_fixtures.ts";

const T0 = 1_700_000_000_000;
const files = fileServer();

Deno.test("postgres: one delivery id sent to two gateways at once makes one event", async () => {
  await withSchema(await files.server(), async (open) => {
    const [a, b] = [await open(), await open()];
    const deliveryIds = Array.from({ length: 25 }, (_, i) => `delivery-${i}`);
    const results = await Promise.all(
      deliveryIds.flatMap((deliveryId) => [
        a.accept(newEvent({ deliveryId })),
        b.accept(newEvent({ deliveryId })),
      ]),
    );
    for (let i = 0; i < results.length; i += 2) {
      const pair = [results[i], results[i + 1]];
      const accepted = pair.filter((result) => result.status === "accepted");
      assert.equal(accepted.length, 1, `one of the two copies of ${deliveryIds[i / 2]}`);
      assert.ok(pair.every((result) => result.eventId === accepted[0].eventId));
    }
    assert.equal((await a.listEvents({ limit: 100 })).length, 25);
  });
});

Deno.test("postgres: two gateways claiming at once never claim one event twice", async () => {
  await withSchema(await files.server(), async (open) => {
    const [a, b] = [await open(), await open()];
    for (let i = 0; i < 60; i++) await a.accept(newEvent({ receivedAtMs: T0 + i }));
    const claimedBy = async (store: typeof a) => {
      const ids: string[] = [];
      for (;;) {
        const batch = await store.claimDue(T0 + 1_000, 4);
        if (batch.length === 0) return ids;
        ids.push(...batch.map((event) => event.id));
      }
    };
    const [byA, byB] = await Promise.all([claimedBy(a), claimedBy(b)]);
    const all = [...byA, ...byB];
    assert.equal(new Set(all).size, all.length, "no event claimed by both");
    assert.equal(all.length, 60);
    assert.ok(byA.length > 0 && byB.length > 0, `both claimed: ${byA.length}, ${byB.length}`);
  });
});

Deno.test(
  "postgres: a dead gateway's event is claimed again when its lease ends; its late outcome records nothing",
  async () => {
    await withSchema(await files.server(), async (open) => {
      const [a, b] = [await open({ leaseSeconds: 30 }), await open({ leaseSeconds: 30 })];
      const id = (await a.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
      await a.claimDue(T0, 1); // `a` stops beating: as if killed
      assert.equal(await b.recoverInterrupted(T0 + 1), 0, "a live lease is not recovered");
      assert.deepEqual(await b.claimDue(T0 + 29_999, 1), [], "not before the lease ends");
      assert.equal(await b.nextDueAtMs(), T0 + 30_000, "the other gateway wakes when it ends");
      const [again] = await b.claimDue(T0 + 30_000, 1);
      assert.equal(again.id, id);
      assert.equal(again.attempts, 2);
      assert.match((await b.attempts(id))[0].error ?? "", /interrupted/);

      await assert.rejects(a.saveResponse(id, "late answer"), ConflictError);
      await assert.rejects(a.markDelivered(id, T0 + 31_000), ConflictError);
      let event = (await b.getEvent(id))!;
      assert.equal(event.status, "running", "the late run recorded nothing");
      assert.equal(event.response, null);

      await b.saveResponse(id, "answer");
      await b.markDelivered(id, T0 + 32_000);
      event = (await a.getEvent(id))!;
      assert.equal(event.status, "delivered");
      assert.equal(event.response, "answer");
      assert.deepEqual((await a.attempts(id)).map((attempt) => attempt.error === null), [
        false,
        true,
      ]);
    });
  },
);

Deno.test("postgres: the heartbeat moves a running event's lease on while its run goes on", async () => {
  await withSchema(await files.server(), async (open) => {
    let nowMs = T0;
    const a = await open({ leaseSeconds: 1, now: () => nowMs });
    const b = await open({ leaseSeconds: 1 });
    const id = (await a.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
    await a.claimDue(T0, 1);
    assert.equal(await b.nextDueAtMs(), T0 + 1_000);
    nowMs = T0 + 5_000; // the run takes long: a's heartbeat, a third of a lease on, moves it
    const moved = await waitFor(async () => await b.nextDueAtMs() === T0 + 6_000);
    assert.ok(moved, "the lease ends a lease after the heartbeat");
    assert.deepEqual(await b.claimDue(T0 + 5_999, 1), [], "so no other gateway claims it");
    await a.markDelivered(id, T0 + 5_500);
    assert.equal((await b.getEvent(id))?.status, "delivered");
  });
});

Deno.test("postgres: a burst accepted through two gateways is folded into one run", async () => {
  await withSchema(await files.server(), async (open) => {
    const [a, b] = [await open(), await open()];
    const coalesce = { key: "octo/repo#1", windowSeconds: 10, maxSeconds: 60 };
    const burst = Array.from(
      { length: 10 },
      (_, i) => newEvent({ receivedAtMs: T0 + i, route: { deliver: "log", skills: [], coalesce } }),
    );
    await Promise.all(burst.map((event, i) => (i % 2 === 0 ? a : b).accept(event)));
    // Each accept slides the window to its event's arrival + 10 s, in the order they commit.
    const due = (await a.nextDueAtMs())!;
    assert.ok(due >= T0 + 10_000 && due <= T0 + 9 + 10_000, "one window for all ten");
    assert.equal(await b.nextDueAtMs(), due);
    const claims = await Promise.all([a.claimDue(due, 8), b.claimDue(due, 8)]);
    const runs = claims.flat();
    assert.equal(runs.length, 1, "one run between the two gateways");
    assert.equal((await a.foldedInto(runs[0].id)).length, 9, "the other nine folded into it");
  });
});

Deno.test("postgres: two gateways run one event of a conversation at a time", async () => {
  await withSchema(await files.server(), async (open) => {
    const [a, b] = [await open(), await open()];
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const event = newEvent({ receivedAtMs: T0 + i, sessionKey: "octo/repo#7" });
      ids.push((await (i % 2 === 0 ? a : b).accept(event)).eventId!);
    }
    const [byA, byB] = await Promise.all([a.claimDue(T0 + 10, 8), b.claimDue(T0 + 10, 8)]);
    assert.deepEqual([...byA, ...byB].map((event) => event.id), [ids[0]], "the earliest only");
    await (byA.length > 0 ? a : b).markDelivered(ids[0], T0 + 20);
    const next = (await Promise.all([b.claimDue(T0 + 30, 8), a.claimDue(T0 + 30, 8)])).flat();
    assert.deepEqual(next.map((event) => event.id), [ids[1]], "then the next, on either");
  });
});

Deno.test("postgres: the throwaway server of shared_test stops", async () => {
  await files.stop();
});

/** Polls `check` until it holds, for at most `maxMs` of real time (a heartbeat's timer). */
async function waitFor(check: () => Promise<boolean>, maxMs = 3_000): Promise<boolean> {
  const deadline = Date.now() + maxMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}
