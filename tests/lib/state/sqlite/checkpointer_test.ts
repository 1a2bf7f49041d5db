import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import {
  type Checkpointer,
  startCheckpointer,
} from "../../../../lib/state/sqlite/_checkpointer.ts";
import { eventually } from "../../../_helpers.ts";
import { tempHome } from "./_fixtures.ts";

/** A WAL database with SQLite's own checkpoints off and a `blobs (body)` table. */
async function walDatabase() {
  const home = await tempHome();
  await Deno.mkdir(`${home.dir}/state`);
  const db = new DatabaseSync(home.dbPath);
  db.exec("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0");
  db.exec("CREATE TABLE blobs (body TEXT)");
  return { home, db };
}

type Home = Awaited<ReturnType<typeof tempHome>>;

/** `startCheckpointer`'s options, less the two every test here sets the same way by default. */
type TestOptions = Omit<Parameters<typeof startCheckpointer>[1], "synchronous" | "onFailure"> & {
  onFailure?: (reason: string) => void;
};

/**
 * Runs `body` with a {@link walDatabase} and a checkpointer on it (`synchronous: NORMAL`,
 * failures ignored unless `options.onFailure` says otherwise), then closes both and removes the
 * folder.
 */
async function withCheckpointer(
  options: TestOptions,
  body: (c: { home: Home; db: DatabaseSync; checkpointer: Checkpointer }) => Promise<void>,
): Promise<void> {
  const { home, db } = await walDatabase();
  const checkpointer = startCheckpointer(home.dbPath, {
    synchronous: "NORMAL",
    onFailure: () => {},
    ...options,
  });
  assert.ok(checkpointer, "a worker thread can be started");
  try {
    await body({ home, db, checkpointer });
  } finally {
    await checkpointer.close();
    db.close();
    await home.cleanup();
  }
}

Deno.test("checkpointer copies the WAL in the background so it stays small", async () => {
  const failures: string[] = [];
  let largestWal = 0;
  const options = {
    maxWalFrames: 64,
    minIntervalMs: 0,
    onFailure: (r: string) => failures.push(r),
  };
  await withCheckpointer(options, async ({ home, db, checkpointer }) => {
    const insert = db.prepare("INSERT INTO blobs VALUES (?)");
    for (let commit = 0; commit < 150; commit++) {
      await checkpointer.beforeCommit();
      db.exec("BEGIN IMMEDIATE");
      for (let row = 0; row < 8; row++) insert.run("x".repeat(4000));
      db.exec("COMMIT");
      checkpointer.afterCommit();
      largestWal = Math.max(largestWal, (await Deno.stat(`${home.dbPath}-wal`)).size);
      if (commit % 10 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    }
  });
  assert.deepEqual(failures, []);
  // 150 commits of 8 pages would make a WAL of ~5 MB without checkpoints.
  assert.ok(largestWal < 2_000_000, `WAL grew to ${largestWal} bytes`);
});

/** Commits `rows` rows of 4,000 bytes and tells the checkpointer. */
function commitRows(db: DatabaseSync, checkpointer: Checkpointer, rows = 1): void {
  const insert = db.prepare("INSERT INTO blobs VALUES (?)");
  db.exec("BEGIN IMMEDIATE");
  for (let row = 0; row < rows; row++) insert.run("x".repeat(4000));
  db.exec("COMMIT");
  checkpointer.afterCommit();
}

Deno.test("checkpointer spaces its passes minIntervalMs apart and still covers every commit", async () => {
  let clock = 0;
  await withCheckpointer({
    minIntervalMs: 60_000,
    now: () => clock,
  }, async ({ db, checkpointer }) => {
    commitRows(db, checkpointer);
    await eventually(() => checkpointer.stats().behind === 0, { what: "the first pass is back" });
    for (let commit = 0; commit < 40; commit++) {
      commitRows(db, checkpointer);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    assert.deepEqual(checkpointer.stats(), { passes: 1, behind: 40 }, "the next pass waits");
    clock = 60_000;
    commitRows(db, checkpointer);
    await eventually(() => checkpointer.stats().behind === 0, { what: "the second pass is back" });
    assert.equal(checkpointer.stats().passes, 2, "one pass for the 41 commits");
  });
});

Deno.test("a commit held at the WAL limit gets its pass at once, not after the spacing", async () => {
  let clock = 0;
  await withCheckpointer({
    maxWalFrames: 64,
    maxWaitMs: 5_000,
    minIntervalMs: 60_000,
    now: () => clock,
  }, async ({ db, checkpointer }) => {
    commitRows(db, checkpointer, 100); // the thread reports a WAL past the limit
    await eventually(() => checkpointer.stats().behind === 0, { what: "the first pass is back" });
    clock = 60_000;
    commitRows(db, checkpointer); // a pass begins
    commitRows(db, checkpointer); // while it runs: the next one is spaced
    const started = performance.now();
    const gate = checkpointer.beforeCommit();
    assert.ok(gate, "the WAL is past its limit");
    await gate;
    const waitedMs = performance.now() - started;
    assert.ok(waitedMs < 1_000, `waited ${waitedMs.toFixed(0)} ms, not maxWaitMs`);
    assert.deepEqual(checkpointer.stats(), { passes: 3, behind: 0 });
  });
});

Deno.test("past half the WAL limit checkpoint passes are no longer spaced", async () => {
  await withCheckpointer({
    maxWalFrames: 64,
    minIntervalMs: 60_000,
    now: () => 0,
  }, async ({ db, checkpointer }) => {
    commitRows(db, checkpointer, 40); // the first pass reports 40+ frames: past half of 64
    await eventually(() => checkpointer.stats().behind === 0, { what: "the first pass is back" });
    commitRows(db, checkpointer);
    assert.equal(checkpointer.stats().passes, 2, "the next pass starts at once");
    await eventually(() => checkpointer.stats().behind === 0, { what: "the second pass is back" });
    commitRows(db, checkpointer); // the second pass reported the WAL restarted, small again
    assert.equal(checkpointer.stats().passes, 2, "spaced again");
  });
});

Deno.test("checkpointer asks for no pass once closed", async () => {
  const { home, db } = await walDatabase();
  const checkpointer = startCheckpointer(home.dbPath, {
    synchronous: "NORMAL",
    minIntervalMs: 20,
    onFailure: () => {},
  })!;
  commitRows(db, checkpointer); // a pass begins
  commitRows(db, checkpointer); // the next is timed for 20 ms later
  await checkpointer.close();
  const { passes } = checkpointer.stats();
  commitRows(db, checkpointer);
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.equal(checkpointer.stats().passes, passes);
  db.close();
  await home.cleanup();
});

Deno.test("checkpointer holds the next commit past maxWalFrames until the WAL can restart", async () => {
  await withCheckpointer({ maxWalFrames: 64, maxWaitMs: 5_000 }, async ({ db, checkpointer }) => {
    const walFrames = () =>
      (db.prepare("PRAGMA wal_checkpoint(PASSIVE)").get() as { log: number }).log;
    commitRows(db, checkpointer, 100);
    let gate: Promise<void> | undefined;
    for (let waited = 0; !gate && waited < 2_000; waited += 5) {
      await new Promise((resolve) => setTimeout(resolve, 5)); // the thread reports the WAL size
      gate = checkpointer.beforeCommit();
    }
    assert.ok(gate, "a WAL of 100+ frames holds the next commit");
    await gate;
    db.exec("BEGIN IMMEDIATE");
    db.prepare("INSERT INTO blobs VALUES (?)").run("small");
    db.exec("COMMIT");
    assert.ok(walFrames() < 10, `the WAL restarted from its beginning (${walFrames()} frames)`);
  });
});

Deno.test("while a reader pins the WAL a commit is held once per maxWalFrames of growth", async () => {
  const options = { maxWalFrames: 64, maxWaitMs: 20, minIntervalMs: 0 };
  await withCheckpointer(options, async ({ home, db, checkpointer }) => {
    const reader = new DatabaseSync(home.dbPath);
    try {
      reader.exec("BEGIN");
      reader.prepare("SELECT count(*) FROM blobs").get(); // a snapshot the WAL cannot restart past
      commitRows(db, checkpointer, 100);
      await eventually(() => checkpointer.stats().behind === 0, { what: "the pass is back" });
      const first = checkpointer.beforeCommit();
      assert.ok(first, "held at the limit");
      await first;
      for (let commit = 0; commit < 20; commit++) {
        commitRows(db, checkpointer);
        await eventually(() => checkpointer.stats().behind === 0, { what: "the pass is back" });
        assert.equal(checkpointer.beforeCommit(), undefined, "not held again at this crossing");
      }
      commitRows(db, checkpointer, 70);
      await eventually(() => checkpointer.stats().behind === 0, { what: "the pass is back" });
      assert.ok(checkpointer.beforeCommit(), "held again after another 64 frames");
    } finally {
      reader.exec("COMMIT");
      reader.close();
    }
  });
});

Deno.test("checkpointer reports a database it cannot open through onFailure", async () => {
  const failures: string[] = [];
  const reported = new Promise<void>((resolve) => {
    const checkpointer = startCheckpointer("/nonexistent/folder/gateway.db", {
      synchronous: "NORMAL",
      onFailure: (reason) => {
        failures.push(reason);
        checkpointer?.close().then(resolve);
      },
    });
  });
  await reported;
  assert.equal(failures.length, 1);
});
