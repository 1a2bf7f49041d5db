import assert from "node:assert/strict";
import { join } from "node:path";
import { loadConfig, webhookUrl } from "../../../lib/config/mod.ts";
import { ConfigError } from "../../../lib/errors.ts";
import { enabledConfig, tempHome } from "../../_helpers.ts";

Deno.test("loadConfig() gives the defaults in an empty home: disabled, 127.0.0.1:8644", async () => {
  await using h = await tempHome();
  const config = await loadConfig({ AGENT_HOME: h.home });
  assert.equal(config.configFileExists, false);
  assert.equal(config.webhook.enabled, false);
  assert.equal(config.webhook.host, "127.0.0.1");
  assert.equal(config.webhook.port, 8644);
  assert.equal(config.webhook.rateLimitPerMinute, 60);
  assert.equal(config.webhook.maxBodyBytes, 1_048_576);
  assert.equal(config.webhook.idempotencyTtlSeconds, 86_400);
  assert.equal(config.paths.subscriptions, join(h.home, "webhook_subscriptions.json"));
});

Deno.test("loadConfig() puts the home in ~/.agent when AGENT_HOME is not set", async () => {
  const config = await loadConfig({ HOME: "/nonexistent-home" });
  assert.equal(config.paths.home, "/nonexistent-home/.agent");
});

Deno.test("loadConfig() merges key by key: process env > .env > config.yaml", async () => {
  await using h = await tempHome({
    config:
      `platforms:\n  webhook:\n    enabled: true\n    extra:\n      host: 0.0.0.0\n      port: 9000\n      secret: from-yaml\n`,
    env: "WEBHOOK_PORT=9100\nWEBHOOK_SECRET=from-dotenv\nTELEGRAM_BOT_TOKEN=t1\n",
  });
  const config = await loadConfig({ AGENT_HOME: h.home, WEBHOOK_SECRET: "from-process" });
  assert.equal(config.webhook.enabled, true);
  assert.equal(config.webhook.host, "0.0.0.0");
  assert.equal(config.webhook.port, 9100);
  assert.equal(config.webhook.secret, "from-process");
  assert.equal(config.env.TELEGRAM_BOT_TOKEN, "t1");
});

Deno.test("loadConfig() takes an empty process variable for unset: .env's token and agent settings show through", async () => {
  await using h = await tempHome({
    env: "TELEGRAM_BOT_TOKEN=123:abc\nAGENT_MODEL=from-dotenv\nOPENAI_API_KEY=sk-dotenv\n",
  });
  const config = await loadConfig({
    AGENT_HOME: h.home,
    TELEGRAM_BOT_TOKEN: "",
    AGENT_MODEL: "",
    OPENAI_API_KEY: "",
  });
  assert.equal(config.env.TELEGRAM_BOT_TOKEN, "123:abc");
  assert.equal(config.agent.model, "from-dotenv");
  assert.equal(config.env.OPENAI_API_KEY, "sk-dotenv");
});

Deno.test("loadConfig() refuses a secret YAML reads as a number (0x1F would become 31), asking for quotes", async () => {
  for (const written of ["0x1F", "012345", "1e3", ".inf"]) {
    await using h = await tempHome({
      config: `platforms:\n  webhook:\n    enabled: true\n    extra:\n      secret: ${written}\n`,
    });
    await assert.rejects(
      () => loadConfig({ AGENT_HOME: h.home }),
      /platforms\.webhook\.extra\.secret in .*config\.yaml must be text: YAML read it as the number .*; quote it/,
      written,
    );
  }
  await using quoted = await tempHome({
    config: `platforms:\n  webhook:\n    enabled: true\n    extra:\n      secret: "0x1F"\n`,
  });
  assert.equal((await loadConfig({ AGENT_HOME: quoted.home })).webhook.secret, "0x1F");
});

Deno.test("loadConfig() lets WEBHOOK_ENABLED=false disable a platform config.yaml enables", async () => {
  await using h = await tempHome({ config: `platforms:\n  webhook:\n    enabled: true\n` });
  for (const word of ["false", "0", "no", "off", "OFF"]) {
    const config = await loadConfig({ AGENT_HOME: h.home, WEBHOOK_ENABLED: word });
    assert.equal(config.webhook.enabled, false, word);
  }
  const on = await loadConfig({ AGENT_HOME: h.home, WEBHOOK_ENABLED: "yes" });
  assert.equal(on.webhook.enabled, true);
});

Deno.test("loadConfig() names the key and the file of a malformed value", async () => {
  await using h = await tempHome({
    config: `platforms:\n  webhook:\n    enabled: maybe\n`,
    env: "WEBHOOK_PORT=abc\n",
  });
  await assert.rejects(
    () => loadConfig({ AGENT_HOME: h.home, WEBHOOK_ENABLED: "true" }),
    (error: ConfigError) =>
      error instanceof ConfigError && error.message.includes("WEBHOOK_PORT") &&
      error.message.includes(join(h.home, ".env")) && error.message.includes('"abc"'),
  );
  await assert.rejects(
    () => loadConfig({ AGENT_HOME: h.home, WEBHOOK_PORT: "8000" }),
    /platforms\.webhook\.enabled in .*config\.yaml must be true or false.*"maybe"/,
  );
  await assert.rejects(
    () => loadConfig({ AGENT_HOME: h.home, WEBHOOK_PORT: "70000", WEBHOOK_ENABLED: "1" }),
    /WEBHOOK_PORT in the process environment must be a whole number from 0 to 65535/,
  );
});

Deno.test("loadConfig() refuses a public_url or base_url with a query or a fragment", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  for (const url of ["https://hooks.example.com/?a=1", "https://hooks.example.com/x#top"]) {
    await assert.rejects(
      () => loadConfig({ AGENT_HOME: h.home, WEBHOOK_PUBLIC_URL: url }),
      /WEBHOOK_PUBLIC_URL in the process environment must be a base URL without "\?" or "#"/,
    );
  }
  await Deno.writeTextFile(
    join(h.home, "config.yaml"),
    enabledConfig() + "agent:\n  base_url: https://llm.example.com/v1?key=x\n",
  );
  await assert.rejects(
    () => loadConfig({ AGENT_HOME: h.home }),
    /agent\.base_url in .*config\.yaml must be a base URL/,
  );
  await assert.rejects(
    () => loadConfig({ AGENT_HOME: h.home, OPENAI_BASE_URL: "https://llm.example.com/v1?key=x" }),
    /OPENAI_BASE_URL in the environment or \.env must be a base URL/,
  );
  await Deno.writeTextFile(join(h.home, "config.yaml"), enabledConfig());
  const config = await loadConfig({
    AGENT_HOME: h.home,
    WEBHOOK_PUBLIC_URL: "https://hooks.example.com/base/",
  });
  assert.equal(webhookUrl(config.webhook, "gh"), "https://hooks.example.com/base/webhooks/gh");
});

Deno.test("loadConfig() refuses durations and counts past their limits, and lists as numbers", async () => {
  const cases: [string, RegExp][] = [
    [
      "platforms:\n  webhook:\n    extra:\n      idempotency_ttl: 9007199254740991\n",
      /platforms\.webhook\.extra\.idempotency_ttl in .*config\.yaml must be a whole number from 1 to 315360000/,
    ],
    [
      "platforms:\n  webhook:\n    extra:\n      retention_days: 100000\n",
      /retention_days .* from 1 to 3650/,
    ],
    ["agent:\n  timeout_seconds: 3000000\n", /agent\.timeout_seconds .* from 1 to 86400/],
    ["agent:\n  timeout_seconds: [2]\n", /agent\.timeout_seconds .* not \[2\]/],
    ["agent:\n  max_concurrency: 5000\n", /max_concurrency .* from 1 to 1000/],
    ["agent:\n  retry:\n    max_attempts: 1000\n", /retry\.max_attempts .* from 1 to 100/],
    [
      "agent:\n  retry:\n    max_delay_seconds: 99999999\n",
      /max_delay_seconds .* from 1 to 604800/,
    ],
    ["agent:\n  retry: 5\n", / agent\.retry in .*config\.yaml must be a mapping/],
    [
      "agent:\n  retry:\n    initial_delay_seconds: 3600\n    max_delay_seconds: 10\n",
      /initial_delay_seconds \(3600\) in .*config\.yaml is longer than agent\.retry\.max_delay_seconds \(10\)/,
    ],
    [
      "platforms:\n  webhook:\n    extra: [1]\n",
      / platforms\.webhook\.extra in .* must be a mapping/,
    ],
  ];
  for (const [config, error] of cases) {
    await using h = await tempHome({ config });
    await assert.rejects(() => loadConfig({ AGENT_HOME: h.home }), error, config);
  }
});

Deno.test("loadConfig() refuses broken YAML with the file's name", async () => {
  await using h = await tempHome({ config: "platforms: [unclosed\n" });
  await assert.rejects(
    () => loadConfig({ AGENT_HOME: h.home }),
    (error: Error) => {
      // What and where, on one line: not the parser's picture of an empty line with a caret.
      assert.match(error.message, /config\.yaml is not valid YAML: .* at line 2, column 1$/);
      assert.doesNotMatch(error.message, /\n/);
      return true;
    },
  );
});

Deno.test("loadConfig() reads the agent section with env overrides", async () => {
  await using h = await tempHome({
    config:
      `agent:\n  provider: command\n  command: ["my-agent", "--print"]\n  timeout_seconds: 30\n`,
  });
  const config = await loadConfig({ AGENT_HOME: h.home, AGENT_MODEL: "m1" });
  assert.equal(config.agent.provider, "command");
  assert.deepEqual(config.agent.command, ["my-agent", "--print"]);
  assert.equal(config.agent.timeoutSeconds, 30);
  assert.equal(config.agent.model, "m1");
  assert.equal(config.agent.maxConcurrency, 2);
  assert.equal(config.agent.retry.maxAttempts, 5);
});

Deno.test("loadConfig() treats an empty variable as unset", async () => {
  await using h = await tempHome({
    config: `platforms:\n  webhook:\n    enabled: true\n    extra:\n      port: 18644\n`,
    env: "WEBHOOK_PORT=\nWEBHOOK_ENABLED=\n",
  });
  const config = await loadConfig({ AGENT_HOME: h.home, WEBHOOK_HOST: "" });
  assert.equal(config.webhook.port, 18644);
  assert.equal(config.webhook.enabled, true);
  assert.equal(config.webhook.host, "127.0.0.1");
});

Deno.test("loadConfig() warns of keys the agent section and its retry do not take", async () => {
  await using h = await tempHome({
    config: "agent:\n  provider: openai\n  model: m\n  base_url: https://llm.example.com/v1\n" +
      "  timeout_seconds: 60\n  max_concurency: 8\n  timeout: 600\n" +
      "  retry: {max_attempt: 9, max_attempts: 3, initial_delay_seconds: 5, max_delay_seconds: 60}\n",
  });
  const config = await loadConfig({ AGENT_HOME: h.home });
  assert.equal(config.agent.maxConcurrency, 2, "the misspelt key is not read");
  assert.deepEqual(config.warnings.map((warning) => warning.split(" ")[0]), [
    "agent.max_concurency",
    "agent.timeout",
    "agent.retry.max_attempt",
  ]);
  assert.match(
    config.warnings[0],
    /is not a setting and is ignored \(a typo\?\); agent takes: provider, command, model/,
  );
});

Deno.test("loadConfig() warns of keys the webhook sections do not take, and of none else", async () => {
  await using h = await tempHome({
    config: "platforms:\n  webhook:\n    enabled: true\n    enable: true\n    extra:\n" +
      "      prot: 9999\n      routes:\n        ci: {event: [pipeline], deliver: log}\n" +
      "  telegram:\n    anything: 1\nagent:\n  model: gpt-4o-mini\nsomething_else: 1\n",
  });
  const config = await loadConfig({ AGENT_HOME: h.home });
  assert.equal(config.webhook.port, 8644);
  assert.deepEqual(config.warnings.map((warning) => warning.split(" ")[0]), [
    "platforms.webhook.enable",
    "platforms.webhook.extra.prot",
    "platforms.webhook.extra.routes.ci.event",
  ]);
  assert.match(
    config.warnings[1],
    /^platforms\.webhook\.extra\.prot in .*config\.yaml is not a setting and is ignored \(a typo\?\); platforms\.webhook\.extra takes: host, port,/,
  );
  // The example config of docs/configuration.md: every key known.
  await using full = await tempHome({
    config: "platforms:\n  webhook:\n    enabled: true\n    extra:\n      host: 127.0.0.1\n" +
      "      port: 8644\n      secret: global-secret\n      public_url: https://hooks.example.com\n" +
      "      rate_limit: 60\n      max_body_bytes: 1048576\n      idempotency_ttl: 86400\n" +
      "      retention_days: 7\n      home: telegram:123456\n      routes:\n" +
      "        ci-alerts: {events: [pipeline], prompt: x, deliver: slack, deliver_extra: {chat_id: C0123}}\n",
  });
  assert.deepEqual((await loadConfig({ AGENT_HOME: full.home })).warnings, []);
});
