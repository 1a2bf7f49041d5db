/**
 * The gateways' presence in a PostgreSQL database: `liveGateways()` counts the open stores that
 * take webhooks and beat within a lease, which per-subscription rate limits divide by
 * (docs/scaling.md#rate-limits).
 *
 * @module
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { eventually } from "../../../_helpers.ts";
import { fileServer, withSchema } from "./_fixtures.ts";

const files = fileServer();

Deno.test("postgres: liveGateways() counts the open gateways that take webhooks", async () => {
  await withSchema(await files.server(), async (open) => {
    const a = await open({ leaseSeconds: 3, gateway: { ingest: true } });
    assert.equal(a.liveGateways?.(), 1);
    const b = await open({ leaseSeconds: 3, gateway: { ingest: true } });
    assert.equal(b.liveGateways?.(), 2, "b finds a's row at open");
    await eventually(() => a.liveGateways?.() === 2, { what: "a's next beat counting b" });
    const worker = await open({ leaseSeconds: 3, gateway: { ingest: false } });
    assert.equal(worker.liveGateways?.(), 2, "a worker-only gateway does not count");
    const command = await open({ leaseSeconds: 3 });
    assert.equal(command.liveGateways?.(), 1, "a command's store writes no row");
    await b.close();
    await eventually(() => a.liveGateways?.() === 1, { what: "a's next beat without b" });
  });
});

Deno.test("postgres: a gateway that stopped beating a lease ago no longer counts", async () => {
  await withSchema(await files.server(), async (open, url) => {
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const a = await open({ leaseSeconds: 3, gateway: { ingest: true } });
      // A gateway killed 10 s ago, and one whose last beat was a second ago.
      await sql.unsafe(
        "INSERT INTO gateways (id, ingests, seen_at) VALUES " +
          "('dead', true, clock_timestamp() - interval '10 seconds'), " +
          "('alive', true, clock_timestamp() - interval '1 second')",
      );
      await eventually(() => a.liveGateways?.() === 2, { what: "a counting the live one" });
    } finally {
      await sql.end();
    }
  });
});

Deno.test("postgres presence: the throwaway server stops", async () => {
  await files.stop();
});
