/**
 * Opening a version 10 database, written before conversations: its events are kept, with no
 * conversation key, and conversations work from then on.
 *
 * @module
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { openStateStore } from "../../../../lib/state/sqlite/mod.ts";
import { newEvent } from "../_fixtures.ts";
import { tempHome } from "./_fixtures.ts";

const T0 = 1_700_000_000_000;

/** Takes a database back to before conversations (its other version 11 columns stay). */
const DOWNGRADE_TO_10 = [
  "DROP INDEX events_session",
  "DROP TABLE session_turns",
  "ALTER TABLE events DROP COLUMN session_key",
  "PRAGMA user_version = 10",
].join(";\n");

Deno.test("opening a version 10 database adds conversations; its events keep running alone", async () => {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath, { backgroundCheckpoints: false });
    const old = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
    await store.close();
    const older = new DatabaseSync(home.dbPath);
    older.exec(DOWNGRADE_TO_10);
    older.close();

    const upgraded = openStateStore(home.dbPath, {
      backgroundCheckpoints: false,
      now: () => T0,
    });
    try {
      assert.equal((await upgraded.getEvent(old))?.sessionKey, undefined);
      const id = (await upgraded.accept(newEvent({ receivedAtMs: T0, sessionKey: "k" })))
        .eventId!;
      assert.deepEqual((await upgraded.claimDue(T0, 10)).map((event) => event.id), [old, id]);
      await upgraded.saveResponse(id, "answer");
      assert.deepEqual((await upgraded.sessionTurns("gh", "k", T0)).map((turn) => turn.answer), [
        "answer",
      ]);
    } finally {
      await upgraded.close();
    }
  } finally {
    await home.cleanup();
  }
});
