import assert from "node:assert/strict";
import { join } from "node:path";
import { writeFileAtomic } from "../../../lib/config/fs.ts";

Deno.test("writeFileAtomic(): a reader at any moment finds the old file or the new one, whole", async () => {
  const dir = await Deno.makeTempDir({ prefix: "agent-fs-" });
  try {
    const path = join(dir, "webhook_subscriptions.json");
    const versions = ["a", "b"].map((letter) => letter.repeat(1 << 20));
    await writeFileAtomic(path, versions[0]);
    let writing = true;
    const seen = new Set<string>();
    const reader = (async () => {
      while (writing) {
        const text = await Deno.readTextFile(path);
        seen.add(versions.includes(text) ? text[0] : `a torn file of ${text.length} characters`);
      }
    })();
    for (let i = 1; i <= 40; i++) await writeFileAtomic(path, versions[i % 2]);
    writing = false;
    await reader;
    assert.deepEqual([...seen].filter((kind) => kind.length > 1), []);
    assert.equal(await Deno.readTextFile(path), versions[0]);
    assert.deepEqual([...Deno.readDirSync(dir)].map((entry) => entry.name), [
      "webhook_subscriptions.json",
    ], "no temporary file is left");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("writeFileAtomic() keeps a symbolic link a link, and writes the file it points to", async () => {
  const dir = await Deno.makeTempDir({ prefix: "agent-fs-" });
  try {
    await Deno.mkdir(join(dir, "dotfiles"));
    const target = join(dir, "dotfiles", "config.yaml");
    await Deno.writeTextFile(target, "old\n");
    const link = join(dir, "config.yaml");
    await Deno.symlink(target, link);
    await writeFileAtomic(link, "new\n");
    assert.ok((await Deno.lstat(link)).isSymlink, "still a link");
    assert.equal(await Deno.readTextFile(target), "new\n");
    assert.equal((await Deno.stat(target)).mode! & 0o777, 0o600);
    assert.deepEqual([...Deno.readDirSync(join(dir, "dotfiles"))].map((entry) => entry.name), [
      "config.yaml",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
