import assert from "node:assert/strict";
import { join } from "node:path";
import {
  readSubscriptions,
  secretProblem,
  secretWarnings,
  unusableSubscriptions,
  updateSubscriptions,
} from "../../../lib/subscriptions/file_store.ts";
import type { Route } from "../../../lib/subscriptions/mod.ts";
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

Deno.test("an emptied subscription file is an error naming it, and is left as it is: only a missing file means none", async () => {
  await using h = await tempHome();
  const path = join(h.home, "webhook_subscriptions.json");
  assert.deepEqual(await readSubscriptions(path), {}, "no file yet: no subscriptions");
  for (const emptied of ["", "  \n", "\uFEFF"]) {
    await Deno.writeTextFile(path, emptied);
    const named = (error: Error) =>
      error instanceof ConfigError && error.file === path &&
      error.message === `${path} is corrupt: it is empty, where a JSON object keyed by ` +
          "subscription name is expected ({} when there are none); restore it from a backup or " +
          "move it away";
    await assert.rejects(() => readSubscriptions(path), named, JSON.stringify(emptied));
    await assert.rejects(
      () => updateSubscriptions(path, (records) => void (records.x = {})),
      named,
    );
    assert.equal(await Deno.readTextFile(path), emptied, "never overwritten");
  }
});

Deno.test("secretProblem() names a secret no sender can satisfy, and says what to do", () => {
  const route = (fields: Partial<Route>): Route => ({ name: "gl", origin: "dynamic", ...fields });
  const problem = (fields: Partial<Route>, global?: string) => secretProblem(route(fields), global);
  for (const none of [{}, { secret: "" }]) {
    assert.equal(
      problem(none),
      "it has no secret (an empty one counts as none), so every request is refused with 403; " +
        "give it one: agent webhook rotate-secret gl",
    );
  }
  assert.match(
    problem({ secret: "gl-tökén" })!,
    /^its secret has characters no header can carry \(outside ASCII, control characters, or blanks at its ends\): GitLab and Bearer senders, which send it as a header, are always refused with 401\. If its sender signs with it \(GitHub, Stripe\.\.\.\), pin that scheme: agent webhook subscribe gl --auth <scheme>; else give it another: agent webhook rotate-secret gl$/,
  );
  assert.match(
    problem({ secret: "gl-tökén", auth: "gitlab" })!,
    /gitlab senders send it as a header, so every request is refused with 401/,
  );
  assert.match(problem({ secret: " padded-secret", auth: "bearer" })!, /bearer senders/);
  // Senders that sign with it carry it in no header.
  assert.equal(problem({ secret: "gl-tökén", auth: "github" }), undefined);
  assert.equal(problem({ secret: "two words-123" }), undefined);
  // A static route without a secret of its own uses the global one; without either, 403.
  assert.equal(problem({ origin: "static" }, "global-secret-1"), undefined);
  assert.match(
    problem({ origin: "static", secret: "" })!,
    /403; give it one: set its secret in config\.yaml$/,
  );
});

Deno.test("secretWarnings() names each served record of the file whose secret no sender can satisfy", async () => {
  await using h = await tempHome();
  const path = join(h.home, "webhook_subscriptions.json");
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      empty: { secret: "" },
      accented: { secret: "gl-tökén" },
      signed: { secret: "gl-tökén", auth: "github" },
      good: { secret: "good-secret-1" },
      // Refused (404) for its target, and hidden by a static route: said elsewhere.
      pig: { secret: "", deliver: "pigeon" },
      ci: { secret: "" },
    }),
  );
  const records = await readSubscriptions(path);
  const warnings = secretWarnings(records, path, new Map([["ci", {}]]));
  assert.deepEqual(warnings.map((w) => w.slice(0, w.indexOf(":"))), [
    `subscription "empty" in ${path}`,
    `subscription "accented" in ${path}`,
  ]);
  assert.match(warnings[0], /: it has no secret .* refused with 403/);
  assert.match(warnings[1], /: its secret has characters no header can carry/);
});
