/**
 * The `state` section of config.yaml with DATABASE_URL over state.url
 * (docs/configuration.md#state), read through `loadConfig` as the gateway and every command read
 * it, and `openStateStore(config)` refusing what cannot be opened without repeating a password.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../../lib/config/mod.ts";
import { ConfigError, StoreUnavailableError } from "../../../lib/errors.ts";
import { openStateStore } from "../../../lib/state/open.ts";
import { enabledConfig, tempHome } from "../../_helpers.ts";

const URL_WITH_PASSWORD = "postgres://agent:s3cret-pw@127.0.0.1:1/agent";

Deno.test("loadConfig() keeps events in SQLite when config.yaml says nothing of state", async () => {
  await using h = await tempHome();
  const { state, warnings } = await loadConfig({ AGENT_HOME: h.home });
  assert.deepEqual(state, {
    backend: "sqlite",
    poolSize: 10,
    leaseSeconds: 30,
    connectTimeoutSeconds: 5,
  });
  assert.deepEqual(warnings, []);
});

Deno.test("loadConfig() reads state: with DATABASE_URL over state.url: process env > .env", async () => {
  await using h = await tempHome({
    config: "state:\n  backend: postgres\n  url: postgres://file@db/a\n  pool_size: 4\n" +
      "  lease_seconds: 12\n  tls_ca_file: ca.pem\n  gateway_id: gw-1\n",
    env: "DATABASE_URL=postgres://dotenv@db/b\n",
  });
  const fromDotEnv = await loadConfig({ AGENT_HOME: h.home });
  assert.equal(fromDotEnv.state.url, "postgres://dotenv@db/b");
  assert.deepEqual(
    [fromDotEnv.state.poolSize, fromDotEnv.state.leaseSeconds, fromDotEnv.state.gatewayId],
    [4, 12, "gw-1"],
  );
  assert.equal(fromDotEnv.state.tlsCaFile, "ca.pem");
  const fromProcess = await loadConfig({ AGENT_HOME: h.home, DATABASE_URL: "postgres://env@db/c" });
  assert.equal(fromProcess.state.url, "postgres://env@db/c");
  const fileOnly = await loadConfig({ AGENT_HOME: h.home }, { fileOnly: true });
  assert.equal(fileOnly.state.url, "postgres://file@db/a");
});

Deno.test("loadConfig() refuses an unknown backend, a URL that is not postgres://, a pool of 0", async () => {
  for (
    const [yaml, message] of [
      [
        "state:\n  backend: mysql\n",
        /state\.backend in .* must be sqlite or postgres, not "mysql"/,
      ],
      ["state:\n  url: mysql://u:pw@db/a\n", /state\.url in .* must be a postgres:\/\/ URL/],
      ["state:\n  pool_size: 0\n", /state\.pool_size in .* must be a whole number from 1/],
    ] as const
  ) {
    await using h = await tempHome({ config: yaml });
    await assert.rejects(
      () => loadConfig({ AGENT_HOME: h.home }),
      (error: Error) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.message, message);
        assert.doesNotMatch(error.message, /pw@/, "the URL's password is not repeated");
        return true;
      },
    );
  }
});

Deno.test("loadConfig() warns of a key of state: that no version reads", async () => {
  await using h = await tempHome({ config: "state:\n  backend: sqlite\n  pool: 3\n" });
  const { warnings } = await loadConfig({ AGENT_HOME: h.home });
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /^state\.pool in .* is not a setting and is ignored/);
});

Deno.test("openStateStore() on postgres says which setting is missing, or which server cannot be reached, never the password", async () => {
  await using h = await tempHome({ config: enabledConfig(0, "state:\n  backend: postgres\n") });
  const noUrl = await loadConfig({ AGENT_HOME: h.home });
  await assert.rejects(
    () => openStateStore(noUrl),
    (error: Error) =>
      error instanceof ConfigError &&
      /neither DATABASE_URL .* nor state\.url names the database/.test(error.message),
  );
  const unreachable = await loadConfig({ AGENT_HOME: h.home, DATABASE_URL: URL_WITH_PASSWORD });
  await assert.rejects(
    () =>
      openStateStore({ ...unreachable, state: { ...unreachable.state, connectTimeoutSeconds: 1 } }),
    (error: Error) =>
      error instanceof StoreUnavailableError && error.message.includes("127.0.0.1:1/agent") &&
      !error.message.includes("s3cret"),
  );
});
