/**
 * The SQLite backend's file: its folder, a file deleted, replaced or emptied under a running
 * store, a folder it may not write, and what a kill -9 leaves.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { StoreUnavailableError } from "../../../../lib/errors.ts";
import { openStateStore } from "../../../../lib/state/sqlite/mod.ts";
import { newEvent } from "../_fixtures.ts";
import { tempHome } from "./_fixtures.ts";

Deno.test("openStateStore() creates the state folder with mode 0700", async () => {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath);
    await store.close();
    const info = await Deno.stat(join(home.dir, "state"));
    assert.equal(info.mode! & 0o777, 0o700);
  } finally {
    await home.cleanup();
  }
});

Deno.test("accept() rejects with StoreUnavailableError once the database file is deleted or replaced", async () => {
  const home = await tempHome();
  try {
    const store = openStateStore(home.dbPath);
    await store.accept(newEvent());
    await Deno.remove(home.dbPath);
    await assert.rejects(store.accept(newEvent()), /gateway\.db was deleted or replaced/);
    await store.close();

    const again = openStateStore(home.dbPath);
    await again.accept(newEvent());
    const backup = `${home.dbPath}.backup`;
    await Deno.copyFile(home.dbPath, backup);
    await Deno.rename(backup, home.dbPath);
    await assert.rejects(again.accept(newEvent()), StoreUnavailableError);
    await again.close();

    const third = openStateStore(home.dbPath);
    await third.accept(newEvent());
    await Deno.remove(`${home.dbPath}-wal`);
    await assert.rejects(third.accept(newEvent()), /gateway\.db-wal was deleted or replaced/);
    await third.close();

    const fresh = openStateStore(home.dbPath); // its log deleted before anything was written
    await Deno.remove(`${home.dbPath}-wal`);
    await assert.rejects(fresh.accept(newEvent()), /gateway\.db-wal was deleted or replaced/);
    await fresh.close();
  } finally {
    await home.cleanup();
  }
});

Deno.test({
  name: "openStateStore() throws StoreUnavailableError when the state folder is read-only",
  // root ignores file modes, so the folder cannot be made read-only for it.
  ignore: Deno.uid() === 0,
  fn: async () => {
    const home = await tempHome();
    try {
      await Deno.chmod(home.dir, 0o500);
      assert.throws(() => openStateStore(home.dbPath), StoreUnavailableError);
    } finally {
      await Deno.chmod(home.dir, 0o700);
      await home.cleanup();
    }
  },
});

Deno.test("openStateStore() refuses an emptied database file beside a log of writes, and keeps the log", async () => {
  const h = await tempHome();
  const path = h.dbPath;
  // The events of a gateway killed before its checkpoint live in the -wal file: copy it aside
  // while the store is open, as a kill -9 leaves it.
  const store = openStateStore(path, { backgroundCheckpoints: false });
  for (let i = 0; i < 5; i++) await store.accept(newEvent({ deliveryId: `kept-${i}` }));
  const log = await Deno.readFile(`${path}-wal`);
  await store.close();
  assert.ok(log.length > 0);
  await Deno.writeFile(`${path}-wal`, log);
  await Deno.writeFile(path, new Uint8Array()); // emptied by accident
  assert.throws(
    () => openStateStore(path),
    (error: Error) =>
      error instanceof StoreUnavailableError &&
      error.message.includes(`${path}: it is empty, but ${path}-wal beside it holds`),
  );
  assert.deepEqual(await Deno.readFile(`${path}-wal`), log, "the log is left as it was");
  assert.equal((await Deno.stat(path)).size, 0);
  await h.cleanup();
});

Deno.test("accept() resolves only for committed events: all of them survive kill -9", async () => {
  const home = await tempHome();
  const storeModule = new URL("../../../../lib/state/sqlite/mod.ts", import.meta.url).href;
  const script = `
    import { openStateStore } from ${JSON.stringify(storeModule)};
    const store = openStateStore(Deno.args[0]);
    for (let round = 0; round < 20; round++) {
      const results = await Promise.all(Array.from({ length: 25 }, (_, i) =>
        store.accept({ subscription: "gh", eventLabel: "push", deliveryId: round + "-" + i,
          dedupe: true, source: "github", mode: "agent", payload: "{}", prompt: "p",
          route: { deliver: "log", skills: [] }, receivedAtMs: Date.now() })));
      for (const result of results) console.log(result.eventId);
    }
    console.log("done");
    await new Promise(() => {}); // killed while the store is still open
  `;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", script, home.dbPath],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const lines: string[] = [];
    let buffer = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buffer += chunk;
      lines.push(...buffer.split("\n").slice(0, -1));
      buffer = buffer.slice(buffer.lastIndexOf("\n") + 1);
      if (lines.includes("done")) break;
    }
    child.kill("SIGKILL");
    await child.status;
    const ids = lines.filter((line) => line.startsWith("evt_"));
    assert.equal(ids.length, 500);
    const store = openStateStore(home.dbPath);
    try {
      const missing = [];
      for (const id of ids) if ((await store.getEvent(id))?.status !== "queued") missing.push(id);
      assert.deepEqual(missing, []);
    } finally {
      await store.close();
    }
  } finally {
    await home.cleanup();
  }
});
