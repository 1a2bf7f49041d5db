/**
 * Fixtures for the SQLite backend's tests: a temporary home for `state/gateway.db`, and a store
 * opened in one.
 *
 * @module
 */
import { join } from "node:path";
import {
  openStateStore,
  type SqliteStateStore,
  type SqliteStoreOptions,
} from "../../../../lib/state/sqlite/mod.ts";

/** A temporary folder holding `state/gateway.db`, removed by `cleanup()`. */
export async function tempHome(): Promise<
  { dbPath: string; dir: string; cleanup(): Promise<void> }
> {
  const dir = await Deno.makeTempDir({ prefix: "agent-state-" });
  return {
    dir,
    dbPath: join(dir, "state", "gateway.db"),
    cleanup: () => Deno.remove(dir, { recursive: true }),
  };
}

/**
 * Opens a store in a temporary folder, runs `body`, then closes the store and removes the folder.
 */
export async function withStore(
  options: SqliteStoreOptions,
  body: (store: SqliteStateStore, dbPath: string) => Promise<void> | void,
): Promise<void> {
  const home = await tempHome();
  const store = openStateStore(home.dbPath, options);
  try {
    await body(store, home.dbPath);
  } finally {
    await store.close();
    await home.cleanup();
  }
}
