/**
 * Opening a database an older version of the gateway wrote: its tables are upgraded in place,
 * its events and idempotency keys kept.
 *
 * @module
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import type { StateStore } from "../../../../lib/state/mod.ts";
import { openStateStore } from "../../../../lib/state/sqlite/mod.ts";
import { SCHEMA_VERSION } from "../../../../lib/state/sqlite/_schema.ts";
import { newEvent } from "../_fixtures.ts";
import { tempHome } from "./_fixtures.ts";

const T0 = 1_700_000_000_000;

/** The tables of schema version 2, as a database that version wrote has them. */
const SCHEMA_V2 = `
CREATE TABLE events (id TEXT NOT NULL UNIQUE, subscription TEXT NOT NULL,
  event_type TEXT NOT NULL, delivery_id TEXT NOT NULL, dedupe INTEGER NOT NULL,
  source TEXT NOT NULL, mode TEXT NOT NULL, payload TEXT NOT NULL, prompt TEXT NOT NULL,
  route TEXT NOT NULL, received_at INTEGER NOT NULL, status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER, response TEXT,
  parts_sent INTEGER NOT NULL DEFAULT 0, last_error TEXT, updated_at INTEGER NOT NULL);
CREATE INDEX events_due ON events(next_attempt_at) WHERE status = 'queued';
CREATE INDEX events_running ON events(status) WHERE status = 'running';
CREATE INDEX events_subscription ON events(subscription);
CREATE TABLE attempts (event_id TEXT NOT NULL, attempt INTEGER NOT NULL,
  started_at INTEGER NOT NULL, finished_at INTEGER, step TEXT NOT NULL, error TEXT);
CREATE INDEX attempts_event ON attempts(event_id);
CREATE INDEX events_received ON events(received_at);
CREATE TABLE idempotency_keys (subscription TEXT NOT NULL, delivery_id TEXT NOT NULL,
  event_id TEXT, expires_at INTEGER NOT NULL, PRIMARY KEY (subscription, delivery_id))
  WITHOUT ROWID;
CREATE INDEX keys_expiry ON idempotency_keys(expires_at);
PRAGMA user_version = 2;
`;

/** Version 1 had neither pruning index. */
const SCHEMA_V1 = SCHEMA_V2
  .replace("CREATE INDEX events_received ON events(received_at);", "")
  .replace("CREATE INDEX keys_expiry ON idempotency_keys(expires_at);", "")
  .replace("PRAGMA user_version = 2;", "PRAGMA user_version = 1;");

for (const [version, schema] of [[1, SCHEMA_V1], [2, SCHEMA_V2]] as const) {
  Deno.test(`opening a version ${version} database moves its idempotency keys onto their events`, () =>
    upgradeMovesKeys(schema));
}

async function upgradeMovesKeys(schema: string): Promise<void> {
  const home = await tempHome();
  await Deno.mkdir(home.dir + "/state");
  const old = new DatabaseSync(home.dbPath);
  old.exec(schema);
  const insert = old.prepare(
    "INSERT INTO events (id, subscription, event_type, delivery_id, dedupe, source, mode, " +
      "payload, prompt, route, received_at, status, updated_at) " +
      "VALUES (?, 'gh', 'issues.opened', ?, 1, 'github', 'agent', '{}', 'p', ?, ?, ?, ?)",
  );
  const route = JSON.stringify({ deliver: "log", skills: [] });
  insert.run("evt_live", "d-live", route, T0, "delivered", T0);
  insert.run("evt_expired", "d-expired", route, T0 - 2000, "queued", T0 - 2000);
  const key = old.prepare("INSERT INTO idempotency_keys VALUES ('gh', ?, ?, ?)");
  key.run("d-live", "evt_live", T0 + 60_000);
  key.run("d-expired", "evt_expired", T0 - 1000);
  key.run("d-pruned", "evt_gone", T0 + 60_000);
  old.close();

  const store = openStateStore(home.dbPath, { backgroundCheckpoints: false });
  try {
    assert.equal((await store.getEvent("evt_live"))?.status, "delivered", "events are kept");
    assert.equal((await store.getEvent("evt_expired"))?.status, "queued");
    assert.equal(await store.keyHolder("gh", "d-live", T0) !== null, true);
    assert.equal(await store.keyHolder("gh", "d-expired", T0) !== null, false);
    assert.equal(
      await store.keyHolder("gh", "d-pruned", T0) !== null,
      false,
      "a key without its event is gone",
    );
    assert.deepEqual(
      await store.accept(newEvent({ deliveryId: "d-live", receivedAtMs: T0 })),
      { status: "duplicate", eventId: "evt_live" },
    );
    const again = await store.accept(newEvent({ deliveryId: "d-expired", receivedAtMs: T0 }));
    assert.equal(again.status, "accepted", "an expired key is taken over");
    assert.notEqual(again.eventId, "evt_expired");
  } finally {
    await store.close();
  }
  const check = new DatabaseSync(home.dbPath);
  const names = (check.prepare("SELECT name FROM sqlite_master").all() as { name: string }[])
    .map((row) => row.name);
  const { user_version } = check.prepare("PRAGMA user_version").get() as { user_version: number };
  check.close();
  await home.cleanup();
  assert.equal(user_version, SCHEMA_VERSION);
  assert.ok(names.includes("events_key") && names.includes("events_finished"), String(names));
  assert.ok(!names.includes("events_received"), String(names));
  assert.ok(names.includes("events_direct_parts"), String(names));
  assert.ok(names.includes("events_failed_subscription"), String(names));
  assert.ok(!names.includes("idempotency_keys") && !names.includes("keys_expiry"), String(names));
}

Deno.test("opening a version 3 database adds the index of partly delivered direct messages", async () => {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath, { backgroundCheckpoints: false });
    const direct = newEvent({ mode: "direct", deliveryId: "dd" });
    await store.recordDirect(direct, {
      delivered: false,
      error: "502 on part 2",
      partsSent: 1,
    });
    await store.close();
    // As version 3 left it: the same tables, without the index.
    const old = new DatabaseSync(home.dbPath);
    old.exec(
      "DROP INDEX events_direct_parts; ALTER TABLE events DROP COLUMN uncounted_attempts; " +
        "PRAGMA user_version = 3;",
    );
    old.close();

    const upgraded = openStateStore(home.dbPath, { backgroundCheckpoints: false });
    try {
      assert.equal(await upgraded.partsSentByFailedAttempts(direct), 1);
    } finally {
      await upgraded.close();
    }
    const check = new DatabaseSync(home.dbPath, { readOnly: true });
    const index = check.prepare(
      "SELECT 1 FROM sqlite_master WHERE name = 'events_direct_parts'",
    ).get();
    const { user_version } = check.prepare("PRAGMA user_version").get() as {
      user_version: number;
    };
    check.close();
    assert.ok(index, "the index was created");
    assert.equal(user_version, SCHEMA_VERSION);
  } finally {
    await home.cleanup();
  }
});

/**
 * A database with one event (`id`, received at T0), made older by `downgrade` (SQL that drops
 * what a later version added and sets `user_version`), then opened again by `upgraded`; the
 * upgrade must end at the current version.
 */
async function withOlderDatabase(
  downgrade: string,
  body: (upgraded: StateStore, id: string) => Promise<void>,
): Promise<void> {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath, { backgroundCheckpoints: false });
    const id = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
    await store.close();
    const old = new DatabaseSync(home.dbPath);
    old.exec(downgrade);
    old.close();
    const upgraded = openStateStore(home.dbPath, { backgroundCheckpoints: false });
    try {
      await body(upgraded, id);
    } finally {
      await upgraded.close();
    }
    const check = new DatabaseSync(home.dbPath, { readOnly: true });
    const { user_version } = check.prepare("PRAGMA user_version").get() as {
      user_version: number;
    };
    check.close();
    assert.equal(user_version, SCHEMA_VERSION);
  } finally {
    await home.cleanup();
  }
}

Deno.test("opening a version 7 database adds the column of replay times, null for every event, set by a replay", async () => {
  await withOlderDatabase(
    "ALTER TABLE events DROP COLUMN replayed_at; PRAGMA user_version = 7;",
    async (upgraded, id) => {
      assert.equal((await upgraded.getEvent(id))?.replayedAtMs, null);
      await upgraded.claimDue(T0, 1);
      await upgraded.markFailed(id, { error: "down", step: "agent", nowMs: T0 + 1 });
      assert.equal((await upgraded.replay(id, T0 + 5_000)).replayedAtMs, T0 + 5_000);
    },
  );
});

Deno.test("opening a version 4 database adds the column of uncounted attempts, 0 for every event", async () => {
  // As version 4 left it: the same tables, without the column.
  await withOlderDatabase(
    "ALTER TABLE events DROP COLUMN uncounted_attempts; ALTER TABLE events DROP COLUMN " +
      "replayed_at; PRAGMA user_version = 4;",
    async (upgraded, id) => {
      assert.equal((await upgraded.getEvent(id))?.uncountedAttempts, 0);
      await upgraded.claimDue(T0, 1);
      await upgraded.savePartsSent(id, 1, { sentBefore: 0, parts: 9 });
      await upgraded.markRetry(id, {
        error: "rate limited",
        step: "delivery",
        nextAttemptAtMs: T0 + 1,
        nowMs: T0,
      });
      assert.equal((await upgraded.getEvent(id))?.uncountedAttempts, 1);
      const replayed = await upgraded.replay(id, T0 + 2);
      assert.equal(replayed.uncountedAttempts, 0, "a replay starts afresh");
    },
  );
});

/** What version 10 added, dropped again: a version 9 database as that version left it. */
const DOWNGRADE_TO_9 = [
  "DROP TABLE parts",
  "ALTER TABLE events DROP COLUMN headers",
  "ALTER TABLE events DROP COLUMN scheme",
  ...["provider", "model", "prompt_tokens", "completion_tokens", "run_ms", "answer"].map(
    (column) => `ALTER TABLE attempts DROP COLUMN ${column}`,
  ),
  "PRAGMA user_version = 9",
].join(";\n");

Deno.test("opening a version 9 database keeps its events and attempts, and stores lineages from then on", async () => {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath, { backgroundCheckpoints: false });
    const old = (await store.accept(newEvent({ receivedAtMs: T0 }))).eventId!;
    await store.claimDue(T0, 1);
    await store.saveResponse(old, "an answer from before");
    await store.markDelivered(old, T0 + 1);
    await store.close();
    const older = new DatabaseSync(home.dbPath);
    older.exec(DOWNGRADE_TO_9);
    older.close();

    const upgraded = openStateStore(home.dbPath, { backgroundCheckpoints: false });
    try {
      const before = (await upgraded.lineage(old))!;
      assert.equal(before.event.status, "delivered", "the event is kept");
      assert.equal(before.event.response, "an answer from before");
      assert.equal(before.event.headers, undefined, "no headers were kept then");
      assert.deepEqual(before.attempts.map((a) => [a.step, a.error, a.run, a.answer]), [
        ["delivery", null, null, null],
      ]);
      assert.deepEqual(before.parts, []);
      const headers = { "x-gitlab-token": "[redacted]" };
      const id = (await upgraded.accept(newEvent({ receivedAtMs: T0, headers, scheme: "gitlab" })))
        .eventId!;
      await upgraded.claimDue(T0, 1);
      const run = { provider: "command", model: null, promptTokens: null, completionTokens: null };
      await upgraded.saveResponse(id, "new", { ...run, durationMs: 40 });
      const receipt = { part: 1, parts: 1, target: "log", chat: "gateway log", sentAtMs: T0 };
      await upgraded.savePartsSent(id, 1, {
        sentBefore: 0,
        parts: 1,
        receipts: [{ ...receipt, messageId: null, url: null }],
      });
      const after = (await upgraded.lineage(id))!;
      assert.deepEqual(after.event.headers, headers);
      assert.equal(after.attempts[0].run?.durationMs, 40);
      assert.equal(after.parts.length, 1);
    } finally {
      await upgraded.close();
    }
    const check = new DatabaseSync(home.dbPath, { readOnly: true });
    const { user_version } = check.prepare("PRAGMA user_version").get() as {
      user_version: number;
    };
    check.close();
    assert.equal(user_version, SCHEMA_VERSION);
  } finally {
    await home.cleanup();
  }
});
