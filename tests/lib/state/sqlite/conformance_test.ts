/**
 * The state store's conformance suite, run against the SQLite backend: each test on a database
 * file in a fresh temporary folder.
 *
 * @module
 */
import { openStateStore } from "../../../../lib/state/sqlite/mod.ts";
import { testStateStore } from "../conformance/mod.ts";
import { tempHome } from "./_fixtures.ts";

testStateStore("sqlite", async () => {
  const home = await tempHome();
  return {
    open: (options) => Promise.resolve(openStateStore(home.dbPath, options)),
    remove: () => home.cleanup(),
  };
});
