/**
 * The SQLite backend's claim of conversations: whether an earlier event of a conversation still
 * waits or runs is found through the index of conversations' pending events, and the claim and
 * the next due time still walk the queue in due order.
 *
 * @module
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { STATEMENTS } from "../../../../lib/state/sqlite/_statements.ts";
import { withStore } from "./_fixtures.ts";

Deno.test("the claim finds a conversation's earlier events through events_session", async () => {
  await withStore({}, (_store, dbPath) => {
    const check = new DatabaseSync(dbPath, { readOnly: true });
    const plan = (sql: string, ...params: number[]) =>
      (check.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[])
        .map((row) => row.detail).join("; ");
    const plans = {
      due: plan(STATEMENTS.due, 0, 10),
      dueForDelivery: plan(STATEMENTS.dueForDelivery, 0, 10),
      nextDue: plan(STATEMENTS.nextDue),
    };
    check.close();
    for (const [name, details] of Object.entries(plans)) {
      assert.match(details, /SEARCH earlier USING (COVERING )?INDEX events_session/, name);
      assert.match(details, /(SCAN|SEARCH) events USING INDEX events_due/, name);
      assert.doesNotMatch(details, /TEMP B-TREE/, name);
    }
    return Promise.resolve();
  });
});
