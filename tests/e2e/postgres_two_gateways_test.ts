/**
 * Two real `gateway run` processes, each with a home of its own, on one PostgreSQL database
 * (docs/scaling.md): one delivery id sent to both at once makes one event and one message, a
 * subscription's rate limit holds across both, and an event one accepts is run by the other's
 * worker within a second or two.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startPostgres, type ThrowawayPostgres } from "../fakes/postgres.ts";
import { eventually, startGatewayProcess } from "../_helpers.ts";
import { deliveriesIn, gatewayIdOf, gatewaysStack, postIssue } from "./_postgres_gateways.ts";

let started: Promise<ThrowawayPostgres> | undefined;
const server = () => started ??= startPostgres();

Deno.test("postgres: the same delivery id sent to two gateways at once makes one event", async () => {
  await using s = await gatewaysStack(await server());
  await using a = await startGatewayProcess(s.envs[0]);
  await using b = await startGatewayProcess(s.envs[1]);
  const ids = Array.from({ length: 20 }, (_, i) => `twice-${i}`);
  const answers = await Promise.all(
    ids.flatMap((id) => [postIssue(a.url, id), postIssue(b.url, id)]),
  );
  for (let i = 0; i < answers.length; i += 2) {
    const pair = [answers[i], answers[i + 1]];
    const statuses = pair.map((answer) => JSON.parse(answer.body).status).sort();
    assert.deepEqual(statuses, ["accepted", "duplicate"], `${ids[i / 2]}: ${pair[0].body}`);
  }
  await eventually(() => s.telegram.messages.length >= ids.length, { what: "20 messages" });
  const [row] = await s.sql`SELECT count(*)::int AS n FROM events`;
  assert.equal(row.n, ids.length, "one event per delivery id");
  await eventually(async () => {
    const [left] = await s.sql`SELECT count(*)::int AS n FROM events WHERE status <> 'delivered'`;
    return left.n === 0;
  }, { what: "every event delivered" });
  const counts = deliveriesIn(s.telegram.messages.map((message) => message.text));
  assert.deepEqual([...counts.keys()].sort(), [...ids].sort());
  assert.ok([...counts.values()].every((n) => n === 1), "each message sent once");
});

Deno.test("postgres: a rate limit of 10 a minute holds across two gateways", async () => {
  await using s = await gatewaysStack(await server(), { subscribe: ["--rate-limit", "10"] });
  await using a = await startGatewayProcess(s.envs[0]);
  await using b = await startGatewayProcess(s.envs[1]);
  // Each gateway counts the others at its heartbeats: wait for a's first beat after b came.
  const [since] = await s.sql`SELECT clock_timestamp() AS at`;
  const aId = await gatewayIdOf(s.homes[0]);
  await eventually(async () => {
    const [row] = await s.sql`SELECT seen_at > ${since.at} AS beat FROM gateways WHERE id = ${aId}`;
    return row?.beat === true;
  }, { what: "a's heartbeat after b started" });
  const answers = [];
  for (let i = 0; i < 30; i++) answers.push(await postIssue(i % 2 ? b.url : a.url, `rate-${i}`));
  const accepted = answers.filter((answer) => answer.status === 202).length;
  const refused = answers.filter((answer) => answer.status === 429);
  assert.ok(accepted >= 10 && accepted <= 11, `about 10 of 30 accepted, not ${accepted}`);
  assert.equal(refused.length, 30 - accepted, "the rest refused with 429");
  assert.ok(refused.every((answer) => Number(answer.retryAfter) >= 1), "each with Retry-After");
});

Deno.test("postgres: an event a --no-worker gateway accepts is run by another within a second or two", async () => {
  await using s = await gatewaysStack(await server());
  await using ingest = await startGatewayProcess(s.envs[0], ["--no-worker"]);
  await using _worker = await startGatewayProcess(s.envs[1], ["--no-ingest"]);
  // The worker finds work another gateway queued at its next poll of the database.
  const delaysMs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const before = s.llm.requests.length;
    const answer = await postIssue(ingest.url, `wake-${i}`);
    assert.equal(answer.status, 202, answer.body);
    const acceptedAt = performance.now();
    await eventually(() => s.llm.requests.length > before, { what: `the run of wake-${i}` });
    delaysMs.push(performance.now() - acceptedAt);
  }
  assert.ok(Math.max(...delaysMs) < 2000, `runs started after ${delaysMs.map(Math.round)} ms`);
});

Deno.test("postgres two gateways: the throwaway server stops", async () => {
  await (await started)?.stop();
});
