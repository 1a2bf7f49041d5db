/**
 * The state store's conformance suite, run against the PostgreSQL backend: one throwaway server
 * for the file (tests/fakes/postgres.ts), a fresh schema for each test.
 *
 * @module
 */
import { openPostgresStore } from "../../../../lib/state/postgres/mod.ts";
import { startPostgres, type ThrowawayPostgres } from "../../../fakes/postgres.ts";
import { testStateStore } from "../conformance/mod.ts";

let server: Promise<ThrowawayPostgres> | undefined;

testStateStore("postgres", async () => {
  server ??= startPostgres();
  const schema = await (await server).createSchema();
  // Every store opened on one place is the same gateway, started again.
  const gatewayId = crypto.randomUUID();
  return {
    open: (options) => openPostgresStore(schema.url, { ...options, poolSize: 4, gatewayId }),
    remove: () => schema.drop(),
  };
});

Deno.test("postgres: the throwaway server stops", async () => {
  await (await server)?.stop();
});
