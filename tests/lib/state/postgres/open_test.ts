/**
 * Opening a PostgreSQL store, and what it answers when the server goes away: the tables created
 * once by gateways starting together, a newer schema refused, a failed login reported without
 * the password, and every call refused with StoreUnavailableError (503 at ingest) while the
 * server is down, the store working again once it is back.
 *
 * @module
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { StoreUnavailableError } from "../../../../lib/errors.ts";
import { openPostgresStore, SCHEMA_VERSION } from "../../../../lib/state/postgres/mod.ts";
import { newEvent } from "../_fixtures.ts";
import { fileServer, withSchema } from "./_fixtures.ts";

const files = fileServer();

Deno.test("postgres: gateways starting together create the tables once", async () => {
  await withSchema(await files.server(), async (open) => {
    const stores = await Promise.all([open(), open(), open()]);
    const { eventId } = await stores[0].accept(newEvent());
    assert.equal((await stores[2].getEvent(eventId!))?.status, "queued");
  });
});

Deno.test("postgres: opening refuses tables a newer version wrote", async () => {
  await withSchema(await files.server(), async (open, url) => {
    await (await open()).close();
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    await sql`UPDATE agent_schema SET version = ${SCHEMA_VERSION + 1}`;
    await sql.end();
    await assert.rejects(openPostgresStore(url), (error: Error) => {
      assert.ok(error instanceof StoreUnavailableError);
      assert.match(error.message, /newer than this program's/);
      return true;
    });
  });
});

Deno.test("postgres: a refused login fails to open, and the message holds no password", async () => {
  const server = await files.server();
  const url = new URL(server.url);
  url.password = "not-the-password-s3cr3t";
  await assert.rejects(openPostgresStore(url.href), (error: Error) => {
    assert.ok(error instanceof StoreUnavailableError);
    assert.match(error.message, /127\.0\.0\.1:\d+\/postgres/);
    assert.doesNotMatch(error.message, /s3cr3t/);
    return true;
  });
});

Deno.test(
  "postgres: while the server is down every call rejects with StoreUnavailableError; then it works again",
  async () => {
    const server = await files.server();
    await withSchema(server, async (open) => {
      const store = await open({ connectTimeoutSeconds: 2 });
      const before = (await store.accept(newEvent())).eventId!;
      await server.halt();
      try {
        await assert.rejects(store.accept(newEvent()), StoreUnavailableError);
        await assert.rejects(store.getEvent(before), StoreUnavailableError);
        await assert.rejects(store.claimDue(Date.now(), 1), StoreUnavailableError);
      } finally {
        await server.restart();
      }
      const after = await store.accept(newEvent());
      assert.equal(after.status, "accepted");
      assert.equal((await store.getEvent(before))?.status, "queued", "what was committed stays");
    });
  },
);

Deno.test("postgres: the throwaway server of open_test stops", async () => {
  await files.stop();
});
