import assert from "node:assert/strict";
import { join } from "node:path";
import {
  readSubscriptions,
  unusableSubscriptions,
  updateSubscriptions,
} from "../../../lib/subscriptions/file_store.ts";
import { ConfigError } from "../../../lib/errors.ts";
import { tempHome } from "../../_helpers.ts";

Deno.test("updateSubscriptions() writes the file with mode 0600 and reads it back", async () => {
  await using h = await tempHome();
  const path = join(h.home, "webhook_subscriptions.json");
  await updateSubscriptions(path, (records) => {
    records.gh = { secret: "s", events: ["issues"] };
  });
  assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
  assert.deepEqual(await readSubscriptions(path), { gh: { secret: "s", events: ["issues"] } });
});

Deno.test("updateSubscriptions() narrows an existing broader mode to 0600", async () => {
  await using h = await tempHome();
  const path = join(h.home, "webhook_subscriptions.json");
  await Deno.writeTextFile(path, "{}", { mode: 0o644 });
  await Deno.chmod(path, 0o644);
  await updateSubscriptions(path, () => {});
  assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
});

Deno.test("updateSubscriptions() refuses a corrupt file and leaves it as it was", async () => {
  await using h = await tempHome();
  const path = join(h.home, "webhook_subscriptions.json");
  await Deno.writeTextFile(path, '{"gh": {"secret": "s"');
  await assert.rejects(
    () => updateSubscriptions(path, (records) => void (records.x = {})),
    (error: Error) => error instanceof ConfigError && error.message.includes(path),
  );
  assert.equal(await Deno.readTextFile(path), '{"gh": {"secret": "s"');
});

Deno.test("updateSubscriptions() keeps the old file when the change throws", async () => {
  await using h = await tempHome();
  const path = join(h.home, "webhook_subscriptions.json");
  await updateSubscriptions(path, (records) => void (records.a = {}));
  await assert.rejects(() =>
    updateSubscriptions(path, (records) => {
      records.b = {};
      throw new Error("no");
    })
  );
  assert.deepEqual(Object.keys(await readSubscriptions(path)), ["a"]);
});

Deno.test("a record with a badly typed field is kept as read, named unusable, and written back unchanged", async () => {
  await using h = await tempHome();
  const path = join(h.home, "webhook_subscriptions.json");
  const typed = { secret: "s", events: "issues", rate_limit: "10" };
  await Deno.writeTextFile(path, JSON.stringify({ gh: typed, ok: { secret: "t" } }));
  const records = await readSubscriptions(path);
  assert.deepEqual(records.gh, typed);
  assert.deepEqual(
    unusableSubscriptions(records, path, new Map()),
    new Map([["gh", `subscription "gh" in ${path}: events must be a list of strings`]]),
  );
  await updateSubscriptions(path, (current) => {
    current.new = { secret: "u" };
  });
  const written = JSON.parse(await Deno.readTextFile(path));
  assert.deepEqual(written, { gh: typed, ok: { secret: "t" }, new: { secret: "u" } });
});

Deno.test("unusableSubscriptions() names a hand-edited bad name, target or scheme; the file stays readable", async () => {
  await using h = await tempHome();
  const path = join(h.home, "webhook_subscriptions.json");
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      "Bad Name": { secret: "s" },
      ["__proto__"]: { secret: "s" },
      pig: { secret: "s", deliver: "pigeon" },
      pin: { secret: "s", auth: "svix" },
      good: { secret: "s", deliver: "telegram", auth: "github" },
    }),
  );
  const records = await readSubscriptions(path);
  assert.deepEqual(Object.keys(records), ["Bad Name", "__proto__", "pig", "pin", "good"]);
  const problems = unusableSubscriptions(records, path, new Map());
  assert.deepEqual([...problems.keys()], ["Bad Name", "__proto__", "pig", "pin"]);
  assert.match(problems.get("Bad Name")!, /subscription "Bad Name" in .*: the name must match/);
  assert.match(
    problems.get("pig")!,
    /subscription "pig" in .*: deliver: unknown target "pigeon"; valid targets: log, telegram/,
  );
  assert.match(
    problems.get("pin")!,
    /subscription "pin" in .*: auth: unknown signature scheme "svix"; valid schemes: github/,
  );
});

Deno.test("readSubscriptions() reads a file saved with a byte-order mark", async () => {
  await using h = await tempHome();
  const path = join(h.home, "webhook_subscriptions.json");
  await Deno.writeTextFile(path, '\uFEFF{"gh": {"secret": "s"}}');
  assert.deepEqual(await readSubscriptions(path), { gh: { secret: "s" } });
});
