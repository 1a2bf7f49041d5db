import assert from "node:assert/strict";
import { join } from "node:path";
import { runCommand } from "../../commands/mod.ts";
import { NotFoundError, UsageError } from "../../lib/errors.ts";
import { readSubscriptions } from "../../lib/subscriptions/file_store.ts";
import { enabledConfig, fakeContext, tempHome } from "../_helpers.ts";

Deno.test("disable keeps the record and its secret, list marks it, and enable clears the mark", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const env = { AGENT_HOME: h.home };
  const path = join(h.home, "webhook_subscriptions.json");
  await runCommand(
    ["webhook", "subscribe", "gh", "--secret", "kept-secret-1", "--events", "issues"],
    fakeContext(env),
  );
  const before = (await readSubscriptions(path)).gh;

  const disable = fakeContext(env, { now: () => Date.parse("2026-02-03T04:05:06Z") });
  assert.equal(await runCommand(["webhook", "disable", "gh"], disable), 0);
  assert.match(disable.output(), /^Disabled subscription "gh".*agent webhook enable gh/s);
  const disabled = (await readSubscriptions(path)).gh;
  assert.deepEqual(disabled, {
    ...before,
    disabled: true,
    updated_at: "2026-02-03T04:05:06.000Z",
  });

  const list = fakeContext(env);
  await runCommand(["webhook", "list"], list);
  assert.match(list.output(), /^gh {2}\[disabled\]\n/);
  assert.match(list.output(), /Secret: +kept-secret-1/);
  const json = fakeContext(env);
  await runCommand(["webhook", "list", "--json"], json);
  assert.equal(JSON.parse(json.output())[0].disabled, true);

  const again = fakeContext(env);
  assert.equal(await runCommand(["webhook", "disable", "gh"], again), 0);
  assert.equal(again.output(), 'Subscription "gh" is already disabled');

  // subscribe keeps it disabled, and says so.
  const update = fakeContext(env);
  await runCommand(["webhook", "subscribe", "gh", "--events", "push"], update);
  assert.equal((await readSubscriptions(path)).gh.disabled, true);
  assert.match(update.err.join("\n"), /"gh" is disabled/);

  const enable = fakeContext(env);
  assert.equal(await runCommand(["webhook", "enable", "gh"], enable), 0);
  assert.match(enable.output(), /^Enabled subscription "gh"/);
  const enabled = (await readSubscriptions(path)).gh;
  assert.equal(enabled.disabled, undefined);
  assert.equal(enabled.secret, "kept-secret-1");
});

Deno.test("disable and enable refuse an unknown name, a bad one and a static route's", async () => {
  await using h = await tempHome({
    config: enabledConfig(8644, "      routes:\n        ci: {deliver: log}\n"),
  });
  const ctx = fakeContext({ AGENT_HOME: h.home });
  await assert.rejects(runCommand(["webhook", "disable", "nope"], ctx), NotFoundError);
  await assert.rejects(runCommand(["webhook", "enable", "nope"], ctx), NotFoundError);
  await assert.rejects(runCommand(["webhook", "disable", "Bad Name"], ctx), UsageError);
  await assert.rejects(
    runCommand(["webhook", "disable", "ci"], ctx),
    /Cannot disable "ci": it is defined in config\.yaml/,
  );
  await assert.rejects(runCommand(["webhook", "disable"], ctx), /Expected one <name>/);
});
