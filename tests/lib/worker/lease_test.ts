/**
 * The worker on a PostgreSQL store shared with another gateway (docs/scaling.md): a run whose
 * lease ended, its event claimed again elsewhere, delivers nothing and records nothing; its
 * refused writes are dropped with a log line, not held and retried as an unavailable store's
 * would be.
 */
import assert from "node:assert/strict";
import type { AgentAnswer } from "../../../lib/agents/mod.ts";
import { openPostgresStore } from "../../../lib/state/postgres/mod.ts";
import type { DeliveryJob, DeliveryReceipt } from "../../../lib/targets/mod.ts";
import { createWorker } from "../../../lib/worker/mod.ts";
import { startPostgres, type ThrowawayPostgres } from "../../fakes/postgres.ts";
import { newEvent } from "../state/_fixtures.ts";

const T0 = 1_700_000_000_000;
const RECEIPT: DeliveryReceipt = { target: "telegram", parts: 1, destination: "chat 123" };

let started: Promise<ThrowawayPostgres> | undefined;
const server = () => started ??= startPostgres();

Deno.test("worker on postgres: a run that lost its lease delivers nothing, and its outcome is dropped with a log line, never retried", async () => {
  const schema = await (await server()).createSchema();
  const gatewayA = await openPostgresStore(schema.url, { poolSize: 2, leaseSeconds: 30 });
  const gatewayB = await openPostgresStore(schema.url, { poolSize: 2, leaseSeconds: 30 });
  const logs: { level: string; message: string }[] = [];
  const delivered: DeliveryJob[] = [];
  const running = Promise.withResolvers<void>();
  const answer = Promise.withResolvers<AgentAnswer>();
  const worker = createWorker({
    store: gatewayA,
    runAgent: () => (running.resolve(), answer.promise),
    deliver: (job) => (delivered.push(job), Promise.resolve(RECEIPT)),
    systemPrompt: () => Promise.resolve(""),
    now: () => T0,
    random: () => 0.5,
    setTimer: () => () => {}, // no pass but the ones the test makes
    log: (level, message) => logs.push({ level, message }),
  });
  try {
    const { eventId } = await gatewayA.accept(newEvent({ receivedAtMs: T0 }));
    worker.start();
    await running.promise; // gateway A's agent run is under way
    // A stalled past its lease (as a paused VM would be): gateway B claims the event again.
    const [claimed] = await gatewayB.claimDue(T0 + 60_000, 1);
    assert.equal(claimed?.id, eventId);

    answer.resolve({ provider: "command", text: "late answer" });
    await worker.idle();
    assert.deepEqual(delivered, [], "the late run sends nothing");
    assert.ok(
      logs.some((line) =>
        line.message === "outcome dropped: the lease on the event was lost to another gateway"
      ),
      JSON.stringify(logs),
    );
    assert.equal(logs.some((line) => line.message.startsWith("cannot record")), false);
    assert.equal(await worker.flushHeld(), 0, "nothing held to be retried");

    // B's run is the one on record: its answer and outcome, attempt 2.
    await gatewayB.saveResponse(eventId!, "B's answer");
    await gatewayB.markDelivered(eventId!, T0 + 61_000);
    const event = await gatewayA.getEvent(eventId!);
    assert.deepEqual([event?.status, event?.response, event?.attempts], [
      "delivered",
      "B's answer",
      2,
    ]);
  } finally {
    await worker.stop({ deadlineMs: 0 });
    await gatewayA.close();
    await gatewayB.close();
    await schema.drop();
  }
});

Deno.test("worker lease_test: the throwaway server stops", async () => {
  await (await started)?.stop();
});
