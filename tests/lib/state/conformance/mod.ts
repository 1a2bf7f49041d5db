/**
 * The conformance suite of the state store: every promise `lib/state/mod.ts` makes of a
 * `StateStore`, as tests any backend must pass. A backend's test file calls
 * {@link testStateStore} with a factory of fresh stores.
 *
 * @example The SQLite backend's run (`tests/lib/state/sqlite/conformance_test.ts`)
 * ```ts
 * testStateStore("sqlite", async () => {
 *   const home = await tempHome();
 *   return {
 *     open: (options) => Promise.resolve(openStateStore(home.dbPath, options)),
 *     remove: () => home.cleanup(),
 *   };
 * });
 * ```
 *
 * @module
 */
import { acceptCases } from "./_accept.ts";
import { coalesceCases } from "./_coalesce.ts";
import { directCases } from "./_direct.ts";
import { historyCases } from "./_history.ts";
import { lineageCases } from "./_lineage.ts";
import { lineageRoutingCases } from "./_lineage_routing.ts";
import { listingCases } from "./_listing.ts";
import { queueCases } from "./_queue.ts";
import { registerCases, type StoreFactory } from "./_suite.ts";
import { sessionCases } from "./_sessions.ts";
import { transformCases } from "./_transforms.ts";
import { workerCases } from "./_worker.ts";

export type { StoreFactory, StorePlace } from "./_suite.ts";

/**
 * Registers the suite's tests (`Deno.test`) for one backend.
 * @param backend its name, the prefix of every test's name: `sqlite: accept() ...`
 * @param factory makes a fresh, empty place for a store, for each test
 */
export function testStateStore(backend: string, factory: StoreFactory): void {
  registerCases(backend, factory, [
    ...acceptCases,
    ...directCases,
    ...workerCases,
    ...historyCases,
    ...listingCases,
    ...lineageCases,
    ...lineageRoutingCases,
    ...queueCases,
    ...coalesceCases,
    ...sessionCases,
    ...transformCases,
  ]);
}
