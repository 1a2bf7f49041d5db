/**
 * Fixtures for the PostgreSQL store's own tests: one throwaway server per test file, and a fresh
 * schema on it for each test, with as many stores (gateways) on it as the test opens.
 *
 * @module
 */
import {
  openPostgresStore,
  type PostgresStoreOptions,
  type StateStore,
} from "../../../../lib/state/postgres/mod.ts";
import { startPostgres, type ThrowawayPostgres } from "../../../fakes/postgres.ts";

/** The file's server, started by the first test that needs it. */
export function fileServer(): {
  server(): Promise<ThrowawayPostgres>;
  stop(): Promise<void>;
} {
  let started: Promise<ThrowawayPostgres> | undefined;
  return {
    server: () => started ??= startPostgres(),
    stop: async () => await (await started)?.stop(),
  };
}

/**
 * Runs `body` on a fresh schema of `server` (tests/fakes/postgres.ts), giving it a function that
 * opens a store there (a gateway) and the schema's URL; closes every store it opened and drops
 * the schema after.
 */
export async function withSchema(
  server: ThrowawayPostgres,
  body: (
    open: (options?: PostgresStoreOptions) => Promise<StateStore>,
    url: string,
  ) => Promise<void>,
): Promise<void> {
  const schema = await server.createSchema();
  const stores: StateStore[] = [];
  try {
    await body(async (options) => {
      const store = await openPostgresStore(schema.url, { poolSize: 4, ...options });
      stores.push(store);
      return store;
    }, schema.url);
  } finally {
    for (const store of stores) await store.close();
    await schema.drop();
  }
}
