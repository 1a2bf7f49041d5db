/**
 * A gateway killed with SIGKILL while its agent runs are in flight, another gateway on the same
 * PostgreSQL database going on (docs/scaling.md): once the dead one's leases end, the other
 * claims its events again, and every event the senders saw acknowledged reaches the chat, none
 * twice but a message that was on its way at the moment of the kill.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startPostgres, type ThrowawayPostgres } from "../fakes/postgres.ts";
import { eventually, startGatewayProcess } from "../_helpers.ts";
import { deliveriesIn, gatewayIdOf, gatewaysStack, postIssue } from "./_postgres_gateways.ts";

let started: Promise<ThrowawayPostgres> | undefined;
const server = () => started ??= startPostgres();

const EVENTS = 500;
const CONCURRENCY = 8;

Deno.test("postgres: 500 events over two gateways, one killed mid-run: none lost, none twice", async () => {
  // The LLM holds every answer until the test lets them go, then takes 20 ms each: the queue
  // fills while both gateways ingest, and each has runs in flight when one is killed.
  const held = Promise.withResolvers<void>();
  await using s = await gatewaysStack(await server(), {
    concurrency: CONCURRENCY,
    subscribe: ["--rate-limit", "100000"],
    answer: async (request) => {
      await held.promise;
      await new Promise((resolve) => setTimeout(resolve, 20));
      return `echo: ${request.messages.at(-1)?.content ?? ""}`;
    },
  });
  await using a = await startGatewayProcess(s.envs[0]);
  await using b = await startGatewayProcess(s.envs[1]);
  const acknowledged: string[] = [];
  for (let batch = 0; batch < EVENTS; batch += 25) {
    const ids = Array.from({ length: 25 }, (_, i) => `ev-${batch + i}`);
    const answers = await Promise.all(
      ids.map((id, i) => postIssue(i % 2 ? b.url : a.url, id)),
    );
    answers.forEach((answer, i) => answer.status === 202 && acknowledged.push(ids[i]));
  }
  assert.equal(acknowledged.length, EVENTS, "both gateways acknowledged every event");

  held.resolve();
  await eventually(() => s.telegram.messages.length >= 100, { what: "100 messages" });
  const aId = await gatewayIdOf(s.homes[0]);
  const [inFlight] = await s.sql`SELECT count(*)::int AS n FROM events
    WHERE status = 'running' AND lease_owner = ${aId}`;
  assert.equal(await a.stop("SIGKILL"), 137);
  assert.ok(inFlight.n > 0, "the killed gateway had runs in flight");

  await eventually(async () => {
    const [left] = await s.sql`SELECT count(*)::int AS n FROM events WHERE status <> 'delivered'`;
    return left.n === 0;
  }, { timeoutMs: 30_000, what: "every event delivered by the gateway left" });
  const counts = deliveriesIn(s.telegram.messages.map((message) => message.text));
  const lost = acknowledged.filter((id) => !counts.has(id));
  assert.deepEqual(lost, [], "no acknowledged event lost");
  const twice = [...counts].filter(([, n]) => n > 1);
  assert.ok(
    twice.length <= CONCURRENCY,
    `only messages on their way at the kill (at most ${CONCURRENCY}) may repeat: ${twice}`,
  );
  const [row] = await s.sql`SELECT count(*)::int AS n FROM events`;
  assert.equal(row.n, EVENTS);
  assert.equal(await b.stop("SIGTERM"), 0);
});

Deno.test("postgres: a gateway killed and started again on its home runs its cut-off event at once", async () => {
  // The first run hangs until the gateway dies; the lease is far longer than the test.
  await using s = await gatewaysStack(await server(), {
    homes: 1,
    leaseSeconds: 60,
    answer: (request, index) =>
      index === 0 ? { hang: true } : `echo: ${request.messages.at(-1)?.content ?? ""}`,
  });
  const first = await startGatewayProcess(s.envs[0]);
  const answer = await postIssue(first.url, "cut-off");
  assert.equal(answer.status, 202, answer.body);
  await eventually(() => s.llm.requests.length === 1, { what: "the first run" });
  assert.equal(await first.stop("SIGKILL"), 137);
  await using again = await startGatewayProcess(s.envs[0]);
  const restartedAt = performance.now();
  await eventually(() => s.telegram.messages.length === 1, {
    timeoutMs: 15_000,
    what: "the event run again without waiting for its 60 s lease",
  });
  assert.ok(performance.now() - restartedAt < 15_000);
  assert.match(s.telegram.messages[0].text, /Delivery cut-off$/);
  assert.equal(await again.stop("SIGTERM"), 0);
});

Deno.test("postgres failover: the throwaway server stops", async () => {
  await (await started)?.stop();
});
