/**
 * PostgreSQL stopped (as a crash stops it) and started again while senders keep posting to a
 * real gateway (docs/scaling.md): while it is down every request is answered 503 with
 * `Retry-After`, never 202, and once it is back every event that was answered 202 reaches the
 * chat. The server is this file's own, as the test stops it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startPostgres } from "../fakes/postgres.ts";
import { eventually, startGatewayProcess } from "../_helpers.ts";
import { deliveriesIn, gatewaysStack, postIssue } from "./_postgres_gateways.ts";

/** What one sender saw. */
interface Sent {
  id: string;
  status: number;
  retryAfter: string | null;
  /** Whether the database was down (halted, not yet restarted) from the request to its answer. */
  down: boolean;
}

Deno.test("postgres: stopped and started under load, senders get 503 and no 202 is lost", async () => {
  const server = await startPostgres();
  try {
    await using s = await gatewaysStack(server, {
      homes: 1,
      subscribe: ["--rate-limit", "100000"],
    });
    await using gateway = await startGatewayProcess(s.envs[0]);
    let down = false;
    let sending = true;
    const sent: Sent[] = [];
    const sender = async (name: string) => {
      for (let n = 0; sending; n++) {
        const id = `${name}-${n}`;
        const sentDown = down;
        // A request the gateway did not answer counts as status 0, which the test refuses.
        const answer = await postIssue(gateway.url, id).catch(() => ({
          status: 0,
          retryAfter: null,
        }));
        sent.push({
          id,
          status: answer.status,
          retryAfter: answer.retryAfter,
          down: sentDown && down,
        });
        if (answer.status === 0) return;
      }
    };
    const senders = Promise.all(["s1", "s2", "s3", "s4"].map(sender));
    await eventually(() => sent.filter((r) => r.status === 202).length >= 50, { what: "50 202s" });
    await server.halt();
    down = true;
    const haltedAt = sent.length;
    await eventually(() => sent.slice(haltedAt).filter((r) => r.status === 503).length >= 8, {
      timeoutMs: 30_000,
      what: "8 answers of 503 while the database is down",
    });
    down = false;
    await server.restart();
    const restartedAt = sent.length;
    await eventually(() => sent.slice(restartedAt).filter((r) => r.status === 202).length >= 50, {
      timeoutMs: 20_000,
      what: "50 more 202s once the database is back",
    });
    sending = false;
    await senders;

    assert.deepEqual([...new Set(sent.map((r) => r.status))].sort(), [202, 503]);
    const whileDown = sent.filter((r) => r.down);
    assert.ok(whileDown.length > 0 && whileDown.every((r) => r.status === 503), "503 while down");
    const refused = sent.filter((r) => r.status === 503);
    assert.ok(refused.every((r) => Number(r.retryAfter) >= 1), "every 503 has Retry-After");
    const acknowledged = sent.filter((r) => r.status === 202).map((r) => r.id);
    await eventually(() => s.telegram.messages.length >= acknowledged.length, {
      timeoutMs: 30_000,
      what: `${acknowledged.length} messages`,
    });
    const counts = deliveriesIn(s.telegram.messages.map((message) => message.text));
    assert.deepEqual(acknowledged.filter((id) => !counts.has(id)), [], "no 202 lost");
    assert.equal(await gateway.stop("SIGTERM"), 0, gateway.output().slice(-2000));
  } finally {
    await server.stop();
  }
});
