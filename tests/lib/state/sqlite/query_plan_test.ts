/**
 * The SQLite backend's query plans: the queries that must not read every event go through the
 * indexes made for them.
 *
 * @module
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { listingQuery } from "../../../../lib/state/sqlite/_maintenance.ts";
import { STATEMENTS } from "../../../../lib/state/sqlite/_statements.ts";
import { withStore } from "./_fixtures.ts";

Deno.test("partsSentByFailedAttempts() reads the index of partly delivered direct messages", async () => {
  await withStore({}, (_store, dbPath) => {
    const check = new DatabaseSync(dbPath, { readOnly: true });
    const plan = check.prepare(`EXPLAIN QUERY PLAN ${STATEMENTS.partsSentByFailedAttempts}`)
      .all("gh", "dd", "x", "{}", 0) as { detail: string }[];
    check.close();
    assert.match(plan.map((row) => row.detail).join("; "), /events_direct_parts/);
    return Promise.resolve();
  });
});

Deno.test("listing the failed events, of all or of one subscription, reads an index of dead letters", async () => {
  await withStore({}, (_store, dbPath) => {
    const check = new DatabaseSync(dbPath, { readOnly: true });
    const plan = (where: string, ...params: (string | number)[]) =>
      (check.prepare(
        `EXPLAIN QUERY PLAN SELECT * FROM events WHERE ${where} ORDER BY rowid DESC LIMIT ?`,
      ).all(...params, 20) as { detail: string }[]).map((row) => row.detail).join("; ");
    const all = plan("status = ?", "failed");
    const byName = plan("subscription = ? AND status = ?", "gh", "failed");
    check.close();
    assert.match(all, /USING INDEX events_failed \(/);
    assert.match(byName, /USING INDEX events_failed_subscription /);
    for (const details of [all, byName]) assert.doesNotMatch(details, /TEMP B-TREE/);
    return Promise.resolve();
  });
});

Deno.test("listing the queued events sorts the rowids of the queued alone, not whole rows", async () => {
  await withStore({}, (_store, dbPath) => {
    const check = new DatabaseSync(dbPath, { readOnly: true });
    for (
      const filter of [{ status: "queued" as const }, {
        status: "queued" as const,
        subscription: "gh",
      }]
    ) {
      const { sql, params } = listingQuery(filter);
      const plan = (check.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as {
        detail: string;
      }[]).map((row) => row.detail).join("; ");
      assert.match(plan, /SCAN events USING (COVERING )?INDEX events_due/);
      assert.match(plan, /SEARCH events USING INTEGER PRIMARY KEY \(rowid=\?\)/);
    }
    check.close();
    return Promise.resolve();
  });
});
