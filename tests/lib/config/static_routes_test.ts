/**
 * `platforms.webhook.extra` as `loadConfig()` checks it: static routes, the home target, the
 * host.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadConfig } from "../../../lib/config/mod.ts";
import { ConfigError } from "../../../lib/errors.ts";
import { enabledConfig, tempHome } from "../../_helpers.ts";

Deno.test("loadConfig() reads static routes and refuses a bad route name", async () => {
  await using h = await tempHome({
    config:
      `platforms:\n  webhook:\n    enabled: true\n    extra:\n      routes:\n        ci-alerts: {events: [pipeline], prompt: "x", deliver: slack}\n`,
  });
  const config = await loadConfig({ AGENT_HOME: h.home });
  const route = config.webhook.routes.get("ci-alerts");
  assert.deepEqual(route?.events, ["pipeline"]);
  assert.equal(route?.origin, "static");

  await Deno.writeTextFile(
    join(h.home, "config.yaml"),
    `platforms:\n  webhook:\n    extra:\n      routes:\n        Bad Name: {}\n`,
  );
  await assert.rejects(() => loadConfig({ AGENT_HOME: h.home }), /Bad Name.*must match/);
});

Deno.test("loadConfig() checks static route fields and turns a numeric chat id into a string", async () => {
  await using h = await tempHome({
    config:
      `platforms:\n  webhook:\n    extra:\n      routes:\n        tg: {deliver: telegram, deliver_extra: {chat_id: -100123}}\n`,
  });
  const config = await loadConfig({ AGENT_HOME: h.home });
  assert.equal(config.webhook.routes.get("tg")?.deliver_extra?.chat_id, "-100123");
  const bad: [string, RegExp][] = [
    ["{prompt: 3}", /routes\.r in .*config\.yaml: prompt must be a string/],
    ["{events: issues}", /events must be a list of strings/],
    ["{rate_limit: abc}", /rate_limit must be a whole number/],
    ["{deliver_only: true, deliver: log}", /deliver_only needs a real target/],
    ["{deliver_extra: [1]}", /deliver_extra must be a mapping/],
  ];
  for (const [route, message] of bad) {
    await Deno.writeTextFile(
      join(h.home, "config.yaml"),
      `platforms:\n  webhook:\n    extra:\n      routes:\n        r: ${route}\n`,
    );
    await assert.rejects(() => loadConfig({ AGENT_HOME: h.home }), message, route);
  }
});

Deno.test("loadConfig() refuses a static route's unknown target or auth, a bad extra.home and a bad host, naming the key", async () => {
  const cases: [string, string, RegExp][] = [
    [
      "      routes:\n        ci:\n          deliver: slak\n",
      "",
      /platforms\.webhook\.extra\.routes\.ci\.deliver in .*config\.yaml: unknown target "slak"; valid targets: log, telegram/,
    ],
    [
      "      routes:\n        ci:\n          auth: svix\n",
      "",
      /routes\.ci\.auth in .*config\.yaml: unknown signature scheme "svix"; valid schemes: github, gitlab/,
    ],
    [
      "      home: fax:123\n",
      "",
      /platforms\.webhook\.extra\.home in .*config\.yaml must be <target> or <target>:<chat id>, .*got "fax:123"/,
    ],
    [
      "      home: origin\n",
      "",
      /extra\.home .*got "origin"/,
    ],
    [
      "",
      "WEBHOOK_HOST=bad!\n",
      /WEBHOOK_HOST in .*\.env must be a host name or an IP address .*got "bad!"/,
    ],
  ];
  for (const [extra, env, message] of cases) {
    await using h = await tempHome({ config: enabledConfig(8644, extra), env });
    await assert.rejects(loadConfig({ AGENT_HOME: h.home }), (error: Error) => {
      assert.ok(error instanceof ConfigError, error.stack);
      assert.match(error.message, message);
      return true;
    });
  }
  for (const host of ["0.0.0.0", "::", "[::1]", "gateway.local", "fe80::1"]) {
    await using h = await tempHome({ config: enabledConfig(), env: `WEBHOOK_HOST=${host}\n` });
    assert.equal((await loadConfig({ AGENT_HOME: h.home })).webhook.host, host);
  }
});
