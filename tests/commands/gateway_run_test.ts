/**
 * `agent gateway run` as a user starts it (`main.ts` as a subprocess, on a free port): the start
 * banner's provider, model, base URL and tokens, and the readiness warnings it prints and logs
 * while it goes on serving.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { enabledConfig, eventually, runCli, startGatewayProcess, tempHome } from "../_helpers.ts";

const OPENAI_KEY = "sk-test-0123456789abcdefSECRET";
const TELEGRAM_TOKEN = "123456:AAH-telegram-SECRET-token";
const GITHUB_TOKEN = "ghp_github_SECRET_token_0123";

/** A subscription file with one agent-mode subscription to a Telegram chat. */
async function telegramSubscription(home: string): Promise<void> {
  await Deno.writeTextFile(
    join(home, "webhook_subscriptions.json"),
    JSON.stringify({
      tg: { secret: "s3cr3t-abcdefgh", deliver: "telegram", deliver_extra: { chat_id: "-1001" } },
    }),
  );
}

Deno.test("gateway run says its provider, model, base URL and tokens, and warns of what is missing while it serves", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  await telegramSubscription(h.home);
  await using gateway = await startGatewayProcess({ AGENT_HOME: h.home, GITHUB_TOKEN });
  const port = new URL(gateway.url).port;
  await eventually(() => gateway.output().includes("then set the https address"), {
    what: "the readiness warnings",
  });
  const output = gateway.output();
  assert.match(
    output,
    /\n {2}agent: {4}openai, model gpt-4o-mini, base URL https:\/\/api\.openai\.com\/v1\n/,
  );
  assert.match(
    output,
    /\n {2}tokens: {3}set for github_comment; not set for telegram, discord, slack, gitlab_comment\n/,
  );
  assert.match(output, /\n {2}ready: {4}✗ 3 to fix: see the warnings, or run agent doctor\n/);
  assert.match(output, /WARNING gateway ✗ agent: OPENAI_API_KEY is not set; the gateway needs it/);
  assert.match(
    output,
    /WARNING gateway ✗ subscription "tg": telegram: TELEGRAM_BOT_TOKEN is not set; the gateway needs it to deliver to telegram: add it to /,
  );
  assert.match(
    output,
    new RegExp(`WARNING gateway {5}cloudflared tunnel --url http://127\\.0\\.0\\.1:${port}\n`),
  );
  assert.match(output, new RegExp(`WARNING gateway {5}ngrok http ${port}\n`));
  assert.ok(!output.includes(GITHUB_TOKEN), "no token is printed");

  const health = await fetch(`${gateway.url}/health`);
  assert.equal(health.status, 200, "it runs on");
  await health.body?.cancel();
  assert.equal(await gateway.stop(), 0);
  // Written to the log too (which --quiet leaves as the only record).
  const log = await Deno.readTextFile(join(h.home, "logs", "gateway.log"));
  assert.match(log, /WARNING gateway ✗ agent: OPENAI_API_KEY is not set/);
});

Deno.test("gateway run with what it needs says ready, warns of nothing and prints no secret", async () => {
  await using h = await tempHome({
    config: `${enabledConfig(0)}agent:\n  model: gpt-4.1-mini\n`,
    env: `OPENAI_API_KEY=${OPENAI_KEY}\nTELEGRAM_BOT_TOKEN=${TELEGRAM_TOKEN}\n`,
  });
  await telegramSubscription(h.home);
  await using gateway = await startGatewayProcess({
    AGENT_HOME: h.home,
    OPENAI_BASE_URL: `http://user:${OPENAI_KEY}@127.0.0.1:9/v1`,
    WEBHOOK_PUBLIC_URL: "https://hooks.example.com",
  });
  await eventually(() => gateway.output().includes("ready:"), { what: "the banner's end" });
  const output = gateway.output();
  assert.match(
    output,
    /\n {2}agent: {4}openai, model gpt-4\.1-mini, base URL http:\/\/127\.0\.0\.1:9\/v1\n/,
  );
  assert.match(
    output,
    /\n {2}tokens: {3}set for telegram; not set for discord, slack, github_comment/,
  );
  assert.match(output, /\n {2}ready: {4}✓\n/);
  assert.equal(await gateway.stop(), 0);
  const all = gateway.output() + await Deno.readTextFile(join(h.home, "logs", "gateway.log"));
  assert.doesNotMatch(all, /✗|WARNING/);
  for (const secret of [OPENAI_KEY, TELEGRAM_TOKEN, "s3cr3t"]) {
    assert.ok(!all.includes(secret), `${secret} is not printed`);
  }
});

Deno.test("gateway run refuses --no-worker or --no-ingest with SQLite, and both at once, before it starts", async () => {
  await using h = await tempHome({ config: enabledConfig(0) });
  for (const flag of ["--no-worker", "--no-ingest"]) {
    const { code, stderr } = await runCli(["gateway", "run", flag], { AGENT_HOME: h.home });
    assert.equal(code, 2, stderr);
    assert.match(
      stderr,
      new RegExp(`${flag} splits the roles between gateways that share a PostgreSQL database`),
    );
    assert.match(stderr, /with SQLite one gateway holds the home and does both/);
  }
  const both = await runCli(["gateway", "run", "--no-worker", "--no-ingest"], {
    AGENT_HOME: h.home,
  });
  assert.equal(both.code, 2);
  assert.match(both.stderr, /--no-worker and --no-ingest together leave the gateway nothing to do/);
  assert.equal(both.stderr.includes("at "), false, "no stack trace");
});

Deno.test("gateway run on postgres without a database URL, or with one unreachable, says so and exits 1", async () => {
  await using h = await tempHome({
    config: enabledConfig(0, "state:\n  backend: postgres\n  connect_timeout: 1\n"),
  });
  const noUrl = await runCli(["gateway", "run"], { AGENT_HOME: h.home });
  assert.equal(noUrl.code, 1, noUrl.stderr);
  assert.match(noUrl.stderr, /state\.backend in .* is postgres, but neither DATABASE_URL/);
  const unreachable = await runCli(["gateway", "run"], {
    AGENT_HOME: h.home,
    DATABASE_URL: "postgres://agent:s3cret-pw@127.0.0.1:1/agent",
  });
  assert.equal(unreachable.code, 1, unreachable.stderr);
  assert.match(unreachable.stderr, /Cannot open the state database 127\.0\.0\.1:1\/agent/);
  assert.equal(unreachable.stderr.includes("s3cret-pw"), false, "no password");
  assert.equal(/\n\s+at /.test(unreachable.stderr), false, "no stack trace");
});
