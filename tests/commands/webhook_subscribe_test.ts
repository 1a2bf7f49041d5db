import assert from "node:assert/strict";
import { join } from "node:path";
import { runCommand } from "../../commands/mod.ts";
import { UsageError } from "../../lib/errors.ts";
import { readSubscriptions } from "../../lib/subscriptions/file_store.ts";
import { createSignatureVerifier } from "../../lib/signatures/mod.ts";
import { Webhook as StandardWebhook } from "standardwebhooks";
import { enabledConfig, fakeContext, runCli, tempHome } from "../_helpers.ts";

Deno.test("subscribe prints the URL and a 43-character secret and stores the record 0600", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const ctx = fakeContext({ AGENT_HOME: h.home });
  const code = await runCommand(
    ["webhook", "subscribe", "gh", "--events", "issues, pull_request", "--prompt", "Hi {x}"],
    ctx,
  );
  assert.equal(code, 0);
  const output = ctx.output();
  assert.match(output, /Created subscription "gh"/);
  assert.match(output, /URL:\s+http:\/\/localhost:8644\/webhooks\/gh/);
  assert.match(output, /Events:\s+issues, pull_request/);
  assert.match(output, /Deliver:\s+log/);
  assert.match(output, /Mode:\s+agent run/);
  const secret = output.match(/Secret:\s+(\S+)/)![1];
  assert.match(secret, /^[A-Za-z0-9_-]{43}$/);
  const path = join(h.home, "webhook_subscriptions.json");
  const records = await readSubscriptions(path);
  assert.equal(records.gh.secret, secret);
  assert.deepEqual(records.gh.events, ["issues", "pull_request"]);
  assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
});

Deno.test("subscribe's summary names the home channel, the default prompt and the rate limit", async () => {
  await using h = await tempHome({
    config: enabledConfig(),
    env: "TELEGRAM_BOT_TOKEN=1:x\nTELEGRAM_HOME_CHANNEL=-100555\n",
  });
  const ctx = fakeContext({ AGENT_HOME: h.home });
  await runCommand(
    ["webhook", "subscribe", "tg", "--deliver", "telegram", "--prompt", "", "--rate-limit", "30"],
    ctx,
  );
  const output = ctx.output();
  assert.match(output, /Deliver: telegram \(chat -100555, from TELEGRAM_HOME_CHANNEL\)\n/);
  assert.match(output, /Prompt: +\(none: the whole JSON payload is sent\)\n/);
  assert.match(output, /Limit: +30 requests\/minute\n/);
  const given = fakeContext({ AGENT_HOME: h.home });
  await runCommand(["webhook", "subscribe", "tg", "--deliver-chat-id", "42"], given);
  assert.match(given.output(), /Deliver: telegram \(chat 42\)\n/);
});

Deno.test("subscribe on an existing name updates it, keeping the secret and created_at", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  let clock = Date.parse("2026-01-01T00:00:00Z");
  const ctx = () => fakeContext({ AGENT_HOME: h.home }, { now: () => clock });
  await runCommand(
    ["webhook", "subscribe", "gh", "--events", "issues", "--description", "d"],
    ctx(),
  );
  const first = (await readSubscriptions(join(h.home, "webhook_subscriptions.json"))).gh;
  clock += 60_000;
  const update = ctx();
  await runCommand(["webhook", "subscribe", "gh", "--events", "push"], update);
  assert.match(update.output(), /Updated subscription "gh"/);
  const second = (await readSubscriptions(join(h.home, "webhook_subscriptions.json"))).gh;
  assert.deepEqual(second.events, ["push"]);
  assert.equal(second.description, "d");
  assert.equal(second.secret, first.secret);
  assert.equal(second.created_at, "2026-01-01T00:00:00.000Z");
  assert.equal(second.updated_at, "2026-01-01T00:01:00.000Z");
});

Deno.test("subscribe takes a Telegram group's negative chat id after a space, as after =", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const ctx = fakeContext({ AGENT_HOME: h.home });
  const code = await runCommand([
    "webhook",
    "subscribe",
    "group",
    "--deliver",
    "telegram",
    "--deliver-chat-id",
    "-1001234567890",
    "--description",
    "-5 is text, not an option",
  ], ctx);
  assert.equal(code, 0, ctx.output());
  const group = (await readSubscriptions(join(h.home, "webhook_subscriptions.json"))).group;
  assert.deepEqual(group.deliver_extra, { chat_id: "-1001234567890" });
  assert.equal(group.description, "-5 is text, not an option");
  await assert.rejects(
    runCommand(["webhook", "events", "--limit", "-1"], fakeContext({ AGENT_HOME: h.home })),
    (error: Error) => error instanceof UsageError && /--limit/.test(error.message),
  );
});

Deno.test("20 concurrent subscribe processes all persist their records", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const results = await Promise.all(
    Array.from(
      { length: 20 },
      (_, i) => runCli(["webhook", "subscribe", `hook-${i}`, "--json"], { AGENT_HOME: h.home }),
    ),
  );
  for (const result of results) assert.equal(result.code, 0, result.stderr);
  const records = await readSubscriptions(join(h.home, "webhook_subscriptions.json"));
  assert.equal(Object.keys(records).length, 20);
});

Deno.test("subscribe --no-deliver-only switches a direct subscription back to agent runs", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const env = { AGENT_HOME: h.home, TELEGRAM_HOME_CHANNEL: "42" };
  await runCommand(
    ["webhook", "subscribe", "gh", "--deliver", "telegram", "--deliver-only"],
    fakeContext(env),
  );
  const ctx = fakeContext(env);
  await runCommand(["webhook", "subscribe", "gh", "--no-deliver-only"], ctx);
  assert.match(ctx.output(), /Mode:\s+agent run/);
  const record = (await readSubscriptions(join(h.home, "webhook_subscriptions.json"))).gh;
  assert.equal(record.deliver_only, false);
  assert.equal(record.deliver, "telegram");
});

Deno.test("subscribe to another target without a chat id drops the old target's chat id", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const run = (args: string[]) => runCommand(args, fakeContext({ AGENT_HOME: h.home }));
  const path = join(h.home, "webhook_subscriptions.json");
  await run(["webhook", "subscribe", "gh", "--deliver", "telegram", "--deliver-chat-id", "5"]);
  await run(["webhook", "subscribe", "gh", "--description", "same target"]);
  assert.deepEqual((await readSubscriptions(path)).gh.deliver_extra, { chat_id: "5" });
  await run(["webhook", "subscribe", "gh", "--deliver", "log"]);
  assert.equal((await readSubscriptions(path)).gh.deliver_extra, undefined);
  await run(["webhook", "subscribe", "gh", "--deliver", "slack", "--deliver-chat-id", "C1"]);
  assert.deepEqual((await readSubscriptions(path)).gh.deliver_extra, { chat_id: "C1" });
  // A chat id set while the target is log (which has none) is for the target that follows.
  await run(["webhook", "subscribe", "later", "--deliver-chat-id", "-100123"]);
  await run(["webhook", "subscribe", "later", "--deliver", "telegram"]);
  assert.deepEqual((await readSubscriptions(path)).later.deliver_extra, { chat_id: "-100123" });
});

Deno.test("subscribe and rotate-secret --auth standard make a whsec_ secret the standardwebhooks library signs with", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const run = (args: string[]) => runCommand(args, fakeContext({ AGENT_HOME: h.home }));
  const path = join(h.home, "webhook_subscriptions.json");
  await run(["webhook", "subscribe", "svix", "--auth", "standard"]);
  const first = (await readSubscriptions(path)).svix.secret!;
  await run(["webhook", "rotate-secret", "svix"]);
  const rotated = (await readSubscriptions(path)).svix.secret!;
  const verifier = createSignatureVerifier();
  for (const secret of [first, rotated]) {
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    const body = JSON.stringify({ type: "invoice.paid" });
    const nowSeconds = Math.floor(Date.now() / 1000);
    const headers = new StandardWebhook(secret).sign("msg_1", new Date(nowSeconds * 1000), body);
    const result = await verifier.verify({
      headers: new Headers({
        "webhook-id": "msg_1",
        "webhook-timestamp": `${nowSeconds}`,
        "webhook-signature": headers,
      }),
      body: new TextEncoder().encode(body),
      secrets: [secret],
      nowSeconds,
      only: "standard",
    });
    assert.deepEqual(result, { ok: true, scheme: "standard" });
  }
  await run(["webhook", "subscribe", "plain"]);
  assert.match((await readSubscriptions(path)).plain.secret!, /^[A-Za-z0-9_-]{43}$/);
});

Deno.test("subscribe warns when the agent provider is not ready, as for a target's token, but not for direct delivery", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const key = "sk-test-0123456789abcdefSECRET";
  const agentWarning =
    /^Warning: OPENAI_API_KEY is not set; the gateway needs it to run the agent \(openai, model gpt-4o-mini at https:\/\/api\.openai\.com\/v1\): add OPENAI_API_KEY=<your key> to .*\.env/;
  const noKey = fakeContext({ AGENT_HOME: h.home });
  assert.equal(await runCommand(["webhook", "subscribe", "gh"], noKey), 0);
  assert.equal(noKey.err.filter((line) => agentWarning.test(line)).length, 1, noKey.err.join("\n"));

  const direct = fakeContext({ AGENT_HOME: h.home, TELEGRAM_BOT_TOKEN: "123:abc" });
  const args = ["--deliver", "telegram", "--deliver-chat-id", "7", "--deliver-only"];
  assert.equal(await runCommand(["webhook", "subscribe", "ping", ...args], direct), 0);
  assert.deepEqual(direct.err, [], "a direct delivery runs no agent");

  await Deno.writeTextFile(join(h.home, ".env"), `OPENAI_API_KEY=${key}\n`);
  const withKey = fakeContext({ AGENT_HOME: h.home });
  assert.equal(await runCommand(["webhook", "subscribe", "gh", "--events", "issues"], withKey), 0);
  assert.deepEqual(withKey.err, []);
  assert.ok(![...noKey.out, ...withKey.out, ...withKey.err].join("\n").includes(key));

  await Deno.writeTextFile(
    join(h.home, "config.yaml"),
    `${enabledConfig()}agent:\n  provider: command\n  command: [no-such-agent-program]\n`,
  );
  const command = fakeContext({ AGENT_HOME: h.home, PATH: "/usr/bin:/bin" });
  assert.equal(await runCommand(["webhook", "subscribe", "gh"], command), 0);
  assert.match(
    command.err.join("\n"),
    /^Warning: the agent command "no-such-agent-program" cannot run: not found on PATH; install it/m,
  );
});

Deno.test("subscribe on an address only this machine reaches points to agent doctor for a public URL", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const local = fakeContext({ AGENT_HOME: h.home });
  await runCommand(["webhook", "subscribe", "gh"], local);
  assert.match(
    local.output(),
    /\nSenders elsewhere cannot use a localhost URL: agent doctor shows how to get a public one/,
  );
  const published = fakeContext({
    AGENT_HOME: h.home,
    WEBHOOK_PUBLIC_URL: "https://hooks.example.com",
  });
  await runCommand(["webhook", "subscribe", "gh"], published);
  assert.match(published.output(), /URL:\s+https:\/\/hooks\.example\.com\/webhooks\/gh/);
  assert.doesNotMatch(published.output(), /agent doctor/);
});
