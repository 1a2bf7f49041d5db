import assert from "node:assert/strict";
import { join } from "node:path";
import { watchStateFile } from "../../server/_state_watch.ts";
import { eventually } from "../_helpers.ts";

/** A folder with a database and its two log files, each holding its own name. */
async function folder() {
  const dir = await Deno.makeTempDir({ prefix: "agent-watch-" });
  const db = join(dir, "gateway.db");
  for (const suffix of ["", "-wal", "-shm"]) await Deno.writeTextFile(db + suffix, `ours${suffix}`);
  return { dir, db, [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }) };
}

const checks = () => new Promise((resolve) => setTimeout(resolve, 60));

Deno.test("a replaced database: its old log is moved aside, and onGone says so once", async () => {
  await using f = await folder();
  const gone: string[] = [];
  const watch = watchStateFile(f.db, { intervalMs: 10, onGone: (m) => gone.push(m) });
  try {
    await Deno.writeTextFile(join(f.dir, "backup.db"), "backup");
    await Deno.rename(join(f.dir, "backup.db"), f.db);
    await eventually(() => gone.length > 0, { what: "onGone" });
    await checks(); // more checks, no second report
    assert.equal(gone.length, 1);
    assert.match(gone[0], /was replaced while the gateway ran.*log was moved aside/);
    assert.equal(watch.gone(), gone[0]);
    const names = [...Deno.readDirSync(f.dir)].map((entry) => entry.name).sort();
    assert.equal(names.length, 3, String(names));
    assert.ok(names.some((name) => name.startsWith("gateway.db-wal.replaced-")), String(names));
    assert.equal(await Deno.readTextFile(f.db), "backup");
  } finally {
    await watch.stop();
  }
});

Deno.test("checks never overlap: a replaced database is reported once even when checks come every millisecond", async () => {
  for (let round = 0; round < 20; round++) {
    await using f = await folder();
    const gone: string[] = [];
    const watch = watchStateFile(f.db, { intervalMs: 1, onGone: (m) => gone.push(m) });
    try {
      await Deno.writeTextFile(join(f.dir, "backup.db"), "backup");
      await Deno.rename(join(f.dir, "backup.db"), f.db);
      await eventually(() => gone.length > 0, { what: "onGone" });
      await checks();
      assert.equal(gone.length, 1, `round ${round}: ${gone.join(" | ")}`);
    } finally {
      await watch.stop();
    }
  }
});

Deno.test("a restored backup whose own log arrives before its database keeps that log", async () => {
  await using f = await folder();
  const gone: string[] = [];
  const watch = watchStateFile(f.db, { intervalMs: 10, onGone: (m) => gone.push(m) });
  try {
    await Deno.writeTextFile(join(f.dir, "backup.db-wal"), "backup-wal");
    await Deno.rename(join(f.dir, "backup.db-wal"), `${f.db}-wal`);
    await checks(); // the watcher looks while only the log has changed
    await Deno.writeTextFile(join(f.dir, "backup.db"), "backup");
    await Deno.rename(join(f.dir, "backup.db"), f.db);
    await eventually(() => gone.length > 0, { what: "onGone" });
    assert.equal(gone.length, 1);
    assert.equal(await Deno.readTextFile(`${f.db}-wal`), "backup-wal", "the backup's log stays");
  } finally {
    await watch.stop();
  }
});

Deno.test("a deleted write-ahead log is reported, though the database is still there", async () => {
  await using f = await folder();
  const gone: string[] = [];
  const watch = watchStateFile(f.db, { intervalMs: 10, onGone: (m) => gone.push(m) });
  try {
    await Deno.remove(`${f.db}-wal`);
    await eventually(() => gone.length > 0, { what: "onGone" });
    assert.match(gone[0] ?? "", /gateway\.db-wal was deleted while the gateway ran/);
    assert.equal(await Deno.readTextFile(f.db), "ours", "the database is left alone");
  } finally {
    await watch.stop();
  }
});

Deno.test("a deleted database is reported as deleted", async () => {
  await using f = await folder();
  const gone: string[] = [];
  const watch = watchStateFile(f.db, { intervalMs: 10, onGone: (m) => gone.push(m) });
  try {
    await Deno.remove(f.db);
    await eventually(() => gone.length > 0, { what: "onGone" });
    assert.match(gone[0] ?? "", /was deleted while the gateway ran/);
  } finally {
    await watch.stop();
  }
});
