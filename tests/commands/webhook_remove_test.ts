import assert from "node:assert/strict";
import { runCommand } from "../../commands/mod.ts";
import { enabledConfig, fakeContext, tempHome } from "../_helpers.ts";

Deno.test("remove deletes a subscription; an unknown name is an error", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const env = { AGENT_HOME: h.home };
  await runCommand(["webhook", "subscribe", "gh"], fakeContext(env));
  const ctx = fakeContext(env);
  assert.equal(await runCommand(["webhook", "remove", "gh"], ctx), 0);
  assert.match(ctx.output(), /Removed subscription "gh"/);
  await assert.rejects(
    () => runCommand(["webhook", "remove", "gh"], fakeContext(env)),
    /No subscription named "gh"/,
  );
});
