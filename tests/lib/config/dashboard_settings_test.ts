/**
 * The `dashboard` section of config.yaml with DASHBOARD_HOST and DASHBOARD_PORT over it
 * (docs/dashboard.md), read through `loadConfig` as every command reads it.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../../lib/config/mod.ts";
import { ConfigError } from "../../../lib/errors.ts";
import { tempHome } from "../../_helpers.ts";

Deno.test("loadConfig() serves the dashboard on 127.0.0.1:8645 when nothing says otherwise", async () => {
  await using h = await tempHome();
  const { dashboard, warnings } = await loadConfig({ AGENT_HOME: h.home });
  assert.deepEqual(dashboard, { enabled: true, host: "127.0.0.1", port: 8645 });
  assert.deepEqual(warnings, []);
});

Deno.test("loadConfig() reads dashboard: from config.yaml, enabled: false turning it off", async () => {
  await using h = await tempHome({
    config: "dashboard:\n  enabled: false\n  host: ::1\n  port: 9001\n",
  });
  const { dashboard } = await loadConfig({ AGENT_HOME: h.home });
  assert.deepEqual(dashboard, { enabled: false, host: "::1", port: 9001 });
});

Deno.test("loadConfig() puts DASHBOARD_HOST and DASHBOARD_PORT over config.yaml: process env > .env", async () => {
  await using h = await tempHome({
    config: "dashboard:\n  host: 127.0.0.1\n  port: 9001\n",
    env: "DASHBOARD_PORT=9002\nDASHBOARD_HOST=0.0.0.0\n",
  });
  const fromDotEnv = await loadConfig({ AGENT_HOME: h.home });
  assert.deepEqual(fromDotEnv.dashboard, { enabled: true, host: "0.0.0.0", port: 9002 });
  const fromProcess = await loadConfig({ AGENT_HOME: h.home, DASHBOARD_PORT: "9003" });
  assert.equal(fromProcess.dashboard.port, 9003);
  const emptyIsUnset = await loadConfig({ AGENT_HOME: h.home, DASHBOARD_PORT: "" });
  assert.equal(emptyIsUnset.dashboard.port, 9002);
  const fileOnly = await loadConfig({ AGENT_HOME: h.home, DASHBOARD_PORT: "9003" }, {
    fileOnly: true,
  });
  assert.deepEqual(fileOnly.dashboard, { enabled: true, host: "127.0.0.1", port: 9001 });
});

Deno.test("loadConfig() refuses a dashboard port or host that cannot be, naming the key and where it is set", async () => {
  await using h = await tempHome({ config: "dashboard:\n  port: 70000\n" });
  await assert.rejects(
    () => loadConfig({ AGENT_HOME: h.home }),
    (error: Error) =>
      error instanceof ConfigError && /dashboard\.port in .*config\.yaml/.test(error.message) &&
      /from 0 to 65535/.test(error.message),
  );
  await assert.rejects(
    () => loadConfig({ AGENT_HOME: h.home, DASHBOARD_PORT: "80", DASHBOARD_HOST: "a b" }),
    /DASHBOARD_HOST in the process environment must be a host name or an IP address/,
  );
  await Deno.writeTextFile(`${h.home}/config.yaml`, "dashboard:\n  enabled: maybe\n");
  await assert.rejects(
    () => loadConfig({ AGENT_HOME: h.home }),
    /dashboard\.enabled in .* true or false/,
  );
  await Deno.writeTextFile(`${h.home}/config.yaml`, "dashboard: 8645\n");
  await assert.rejects(
    () => loadConfig({ AGENT_HOME: h.home }),
    /dashboard in .* must be a mapping/,
  );
});

Deno.test("loadConfig() warns of a dashboard key no version reads", async () => {
  await using h = await tempHome({ config: "dashboard:\n  prot: 9000\n" });
  const { dashboard, warnings } = await loadConfig({ AGENT_HOME: h.home });
  assert.equal(dashboard.port, 8645);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /dashboard\.prot in .* is not a setting .* takes: enabled, host, port/);
});
