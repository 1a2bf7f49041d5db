import assert from "node:assert/strict";
import { join, resolve } from "node:path";
import { ConfigError } from "../../../lib/errors.ts";
import { homePaths } from "../../../lib/config/home.ts";

Deno.test("homePaths() expands a leading ~ in AGENT_HOME and makes a relative one absolute", () => {
  const env = { HOME: "/home/ada" };
  assert.equal(homePaths({ ...env, AGENT_HOME: "~/agenthome" }).home, "/home/ada/agenthome");
  assert.equal(homePaths({ ...env, AGENT_HOME: "~" }).config, "/home/ada/config.yaml");
  assert.equal(homePaths({ ...env, AGENT_HOME: "homes/a" }).home, resolve("homes/a"));
  assert.equal(
    homePaths({ ...env, AGENT_HOME: "/srv/agent" }).stateDb,
    "/srv/agent/state/gateway.db",
  );
  assert.equal(homePaths(env).home, join("/home/ada", ".agent"));
  assert.equal(homePaths({ ...env, AGENT_HOME: "" }).home, "/home/ada/.agent", "empty is unset");
  assert.throws(() => homePaths({ AGENT_HOME: "~/x" }), ConfigError);
  assert.throws(() => homePaths({}), ConfigError);
});
