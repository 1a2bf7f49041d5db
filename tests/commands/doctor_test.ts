import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { runCommand } from "../../commands/mod.ts";
import { openStateStore, SCHEMA_VERSION } from "../../lib/state/sqlite/mod.ts";
import { enabledConfig, fakeContext, tempHome } from "../_helpers.ts";

const OPENAI_KEY = "sk-test-0123456789abcdefSECRET";
const TELEGRAM_TOKEN = "123456:AAH-telegram-SECRET-token";
const GITHUB_TOKEN = "ghp_github_SECRET_token_0123";

/** Runs `agent doctor` in a home; returns the exit code, its lines and all it printed. */
async function doctor(env: Record<string, string>) {
  const ctx = fakeContext(env);
  const code = await runCommand(["doctor"], ctx);
  const output = [...ctx.out, ...ctx.err].join("\n");
  return { code, output, lines: output.split("\n") };
}

/** The line of the check named `subject`; fails the test when there is none. */
function line(lines: string[], subject: string): string {
  const found = lines.find((l) => /^[✓✗] /.test(l) && l.slice(2).startsWith(`${subject}: `));
  assert.ok(found, `no "${subject}" line in:\n${lines.join("\n")}`);
  return found;
}

/** Writes subscriptions as `subscribe` stores them (or as a hand edit left them). */
async function subscriptions(home: string, records: Record<string, Record<string, unknown>>) {
  const withSecrets = Object.fromEntries(
    Object.entries(records).map((
      [name, record],
    ) => [name, { secret: "s3cr3t-abcdefgh", ...record }]),
  );
  await Deno.writeTextFile(join(home, "webhook_subscriptions.json"), JSON.stringify(withSecrets));
}

Deno.test("doctor names a missing OPENAI_API_KEY and where to set it, and exits 1 when a subscription runs the agent", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  await subscriptions(h.home, { gh: { deliver: "log" } });
  const { code, lines } = await doctor({ AGENT_HOME: h.home });
  assert.equal(code, 1);
  const agent = line(lines, "agent");
  assert.match(agent, /^✗ agent: OPENAI_API_KEY is not set; the gateway needs it to run the agent/);
  assert.match(agent, /openai, model gpt-4o-mini at https:\/\/api\.openai\.com\/v1/);
  assert.ok(agent.includes(`add OPENAI_API_KEY=<your key> to ${join(h.home, ".env")}`), agent);
  assert.match(lines.at(-1)!, /^Not ready: 1 of the ✗ lines above stop subscriptions/);
});

Deno.test("doctor reads the key from .env, says the model and base URL, and never prints the key", async () => {
  await using h = await tempHome({
    config:
      `${enabledConfig()}agent:\n  model: gpt-4.1\n  base_url: https://user:${OPENAI_KEY}@llm.example/v1\n`,
    env: `OPENAI_API_KEY=${OPENAI_KEY}\n`,
  });
  await subscriptions(h.home, { gh: { deliver: "log" } });
  const { code, output, lines } = await doctor({ AGENT_HOME: h.home });
  assert.equal(
    line(lines, "agent"),
    "✓ agent: openai, model gpt-4.1 at https://llm.example/v1, OPENAI_API_KEY set",
  );
  assert.equal(code, 0, output);
  assert.ok(!output.includes(OPENAI_KEY), "the key is not printed");
  assert.ok(!output.includes("s3cr3t"), "no subscription secret is printed");
});

Deno.test("doctor exits 0 without a key when no subscription runs the agent, and passes a local endpoint without one", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  await subscriptions(h.home, {
    direct: { deliver: "telegram", deliver_only: true, deliver_extra: { chat_id: "42" } },
  });
  const env = { AGENT_HOME: h.home, TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN };
  const withoutKey = await doctor(env);
  assert.match(line(withoutKey.lines, "agent"), /^✗ agent: OPENAI_API_KEY is not set/);
  assert.equal(withoutKey.code, 0, "nothing a subscription needs is missing");
  assert.match(withoutKey.lines.at(-1)!, /^Ready for the subscriptions there are/);

  await subscriptions(h.home, { gh: { deliver: "log" } });
  assert.equal((await doctor(env)).code, 1, "an agent subscription needs the key");
  const local = await doctor({ ...env, OPENAI_BASE_URL: "http://127.0.0.1:11434/v1" });
  assert.match(
    line(local.lines, "agent"),
    /^✓ agent: openai, model gpt-4o-mini at http:\/\/127\.0\.0\.1:11434\/v1, no OPENAI_API_KEY/,
  );
  assert.equal(local.code, 0);
});

Deno.test("doctor finds a command agent's program on PATH, and says one that is missing or not executable", async () => {
  await using h = await tempHome();
  const bin = join(h.home, "bin");
  await Deno.mkdir(bin);
  const script = join(bin, "my-agent");
  await Deno.writeTextFile(script, "#!/bin/sh\ncat\n");
  await Deno.chmod(script, 0o644);
  await subscriptions(h.home, { gh: { deliver: "log" } });
  const withCommand = (command: string) =>
    Deno.writeTextFile(
      join(h.home, "config.yaml"),
      `${enabledConfig()}agent:\n  provider: command\n  command: [${command}, --api-key, ${OPENAI_KEY}]\n`,
    );
  const env = { AGENT_HOME: h.home, PATH: `${bin}:/usr/bin:/bin` };

  await withCommand("no-such-agent-program");
  const missing = await doctor(env);
  assert.equal(missing.code, 1);
  assert.match(
    line(missing.lines, "agent"),
    /^✗ agent: the agent command "no-such-agent-program" cannot run: not found on PATH; install it, or give its full path in agent\.command in .*config\.yaml$/,
  );

  await withCommand("my-agent");
  const notExecutable = await doctor(env);
  assert.equal(notExecutable.code, 1);
  assert.match(
    line(notExecutable.lines, "agent"),
    /^✗ agent: the agent command "my-agent" cannot run: .*my-agent is not executable; make it executable \(chmod \+x\)/,
  );

  await Deno.chmod(script, 0o755);
  const ready = await doctor(env);
  assert.equal(line(ready.lines, "agent"), `✓ agent: command ${script}`);
  assert.equal(ready.code, 0, ready.output);
  assert.ok(!ready.output.includes(OPENAI_KEY), "the command's arguments are not printed");
});

Deno.test("doctor names a target's missing token with where to set it, and passes it once set without printing it", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  await subscriptions(h.home, {
    tg: { deliver: "telegram", deliver_extra: { chat_id: "-1001234" } },
  });
  const env = { AGENT_HOME: h.home, OPENAI_API_KEY: OPENAI_KEY };
  const missing = await doctor(env);
  assert.equal(missing.code, 1);
  assert.equal(
    line(missing.lines, 'subscription "tg"'),
    '✗ subscription "tg": telegram: TELEGRAM_BOT_TOKEN is not set; the gateway needs it to ' +
      `deliver to telegram: add it to ${join(h.home, ".env")} or the gateway's environment, ` +
      "then restart a running gateway",
  );

  await Deno.writeTextFile(join(h.home, ".env"), `TELEGRAM_BOT_TOKEN=${TELEGRAM_TOKEN}\n`);
  const set = await doctor(env);
  assert.equal(
    line(set.lines, 'subscription "tg"'),
    '✓ subscription "tg": agent run, delivered to telegram (chat -1001234)',
  );
  assert.equal(set.code, 0, set.output);
  assert.ok(!set.output.includes(TELEGRAM_TOKEN), "the token is not printed");
});

Deno.test("doctor says a chat id of the wrong shape and how to change it, and a chat target with no destination", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  await subscriptions(h.home, {
    topic: { deliver: "telegram", deliver_extra: { chat_id: "-100123:general" } },
    nowhere: { deliver: "slack" },
    rendered: { deliver: "telegram", deliver_extra: { chat_id: "{chat.id}" } },
  });
  const env = {
    AGENT_HOME: h.home,
    OPENAI_API_KEY: OPENAI_KEY,
    TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN,
    SLACK_BOT_TOKEN: "xoxb-SECRET",
  };
  const { code, lines } = await doctor(env);
  assert.equal(code, 1);
  assert.equal(
    line(lines, 'subscription "topic"'),
    '✗ subscription "topic": telegram: --deliver-chat-id "-100123:general": a Telegram topic ' +
      'must be a message thread id, got "general": give another with agent webhook subscribe ' +
      "topic --deliver-chat-id <chat>",
  );
  assert.match(
    line(lines, 'subscription "nowhere"'),
    /^✗ subscription "nowhere": slack: --deliver slack needs a destination: pass --deliver-chat-id, or set SLACK_HOME_CHANNEL/,
  );
  // A chat id with placeholders is known only per event.
  assert.match(line(lines, 'subscription "rendered"'), /^✓ /);
});

Deno.test("doctor says origin has no home target for events without an issue, and checks the home's token", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  await subscriptions(h.home, { back: { deliver: "origin", deliver_only: true } });
  const env = { AGENT_HOME: h.home, GITHUB_TOKEN };
  const noHome = await doctor(env);
  assert.equal(noHome.code, 1);
  assert.match(
    line(noHome.lines, 'subscription "back"'),
    /^✗ subscription "back": origin: events with no issue or merge request to comment on \(a push, a Stripe event\) have nowhere to go: set platforms\.webhook\.extra\.home in .*config\.yaml \(e\.g\. telegram:123456\)$/,
  );

  await Deno.writeTextFile(
    join(h.home, "config.yaml"),
    enabledConfig(8644, "      home: telegram:-1005\n"),
  );
  const homeWithoutToken = await doctor(env);
  assert.match(
    line(homeWithoutToken.lines, 'subscription "back"'),
    /^✗ subscription "back": origin: TELEGRAM_BOT_TOKEN is not set; the gateway needs it to deliver to telegram: add it to /,
  );
  const ready = await doctor({ ...env, TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN });
  assert.match(line(ready.lines, 'subscription "back"'), /^✓ subscription "back": direct delivery/);
  assert.equal(ready.code, 0, ready.output);
  assert.ok(!ready.output.includes(GITHUB_TOKEN) && !ready.output.includes(TELEGRAM_TOKEN));
});

Deno.test("doctor shows a tunnel's commands and how to set public_url on a loopback address, without failing the exit code", async () => {
  await using h = await tempHome({ config: enabledConfig(8644) });
  const loopback = await doctor({ AGENT_HOME: h.home });
  const at = loopback.lines.findIndex((l) => l.startsWith("✗ address: "));
  assert.match(
    loopback.lines[at],
    /^✗ address: listens on 127\.0\.0\.1:8644, which only this machine reaches, and public_url is not set: senders elsewhere \(GitHub, Stripe\) need a tunnel or a reverse proxy/,
  );
  assert.deepEqual(loopback.lines.slice(at + 1, at + 3), [
    "    cloudflared tunnel --url http://127.0.0.1:8644",
    "    ngrok http 8644",
  ]);
  assert.match(
    loopback.lines[at + 3],
    /^ {2}then set the https address senders use as public_url: WEBHOOK_PUBLIC_URL=https:\/\/<host> in .*\.env, or platforms\.webhook\.extra\.public_url in .*config\.yaml$/,
  );
  assert.equal(loopback.code, 0, "no subscription needs it");

  const everywhere = await doctor({ AGENT_HOME: h.home, WEBHOOK_HOST: "0.0.0.0" });
  assert.match(
    line(everywhere.lines, "address"),
    /^✗ address: listens on every address at port 8644, and public_url is not set: subscribe prints http:\/\/localhost:8644\/webhooks\/<name>/,
  );
  const public_ = await doctor({
    AGENT_HOME: h.home,
    OPENAI_API_KEY: OPENAI_KEY,
    WEBHOOK_PUBLIC_URL: "https://hooks.example.com",
  });
  assert.equal(
    line(public_.lines, "address"),
    "✓ address: listens on 127.0.0.1:8644; senders use https://hooks.example.com/webhooks/<name>",
  );
  assert.equal(public_.lines.at(-1), "Ready.");
});

Deno.test("doctor gives the state database's schema version, and refuses one a newer version wrote", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const stateDb = join(h.home, "state", "gateway.db");
  const fresh = await doctor({ AGENT_HOME: h.home });
  assert.equal(
    line(fresh.lines, "state"),
    `✓ state: ${stateDb} does not exist yet; gateway run creates it`,
  );
  await Deno.stat(join(h.home, "state")).then(
    () => assert.fail("doctor creates nothing"),
    (error) => assert.ok(error instanceof Deno.errors.NotFound),
  );

  await openStateStore(stateDb, { backgroundCheckpoints: false }).close();
  const made = await doctor({ AGENT_HOME: h.home });
  assert.equal(
    line(made.lines, "state"),
    `✓ state: ${stateDb} writable, schema version ${SCHEMA_VERSION}`,
  );

  const db = new DatabaseSync(stateDb);
  db.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 1}`);
  db.close();
  const newer = await doctor({ AGENT_HOME: h.home });
  assert.match(line(newer.lines, "state"), /^✗ state: Cannot open the state database .*newer/);
  assert.equal(newer.code, 1);
});

/**
 * How this process can make a folder it cannot write: root ignores file modes, so a read-only
 * tmpfs is mounted there for it (where the sandbox allows mounting); others get mode 0500.
 */
const unwritableBy = await (async (): Promise<"mode" | "mount" | undefined> => {
  if (Deno.build.os === "windows") return undefined;
  if (Deno.uid() !== 0) return "mode";
  const dir = await Deno.makeTempDir({ prefix: "agent-ro-probe-" });
  const run = (...args: string[]) =>
    new Deno.Command(args[0], { args: args.slice(1), stdout: "null", stderr: "null" }).output()
      .then((o) => o.success, () => false);
  const mounted = await run("mount", "-t", "tmpfs", "-o", "ro,size=16k", "tmpfs", dir);
  if (mounted) await run("umount", dir);
  await Deno.remove(dir);
  return mounted ? "mount" : undefined;
})();

/** Makes `folder` (created) unwritable until the returned function is called. */
async function unwritable(folder: string): Promise<() => Promise<void>> {
  await Deno.mkdir(folder, { recursive: true });
  const run = async (...args: string[]) =>
    assert.ok((await new Deno.Command(args[0], { args: args.slice(1) }).output()).success);
  if (unwritableBy === "mount") {
    await run("mount", "-t", "tmpfs", "-o", "ro,size=16k", "tmpfs", folder);
    return () => run("umount", folder);
  }
  await Deno.chmod(folder, 0o500);
  return () => Deno.chmod(folder, 0o700);
}

for (const [subject, folder] of [["state", "state"], ["log", "logs"]] as const) {
  Deno.test({
    name: `doctor says an unwritable ${folder} folder with the next step, and exits 1`,
    ignore: unwritableBy === undefined,
    async fn() {
      await using h = await tempHome({ config: enabledConfig() });
      const env = { AGENT_HOME: h.home, WEBHOOK_PUBLIC_URL: "https://hooks.example.com" };
      assert.equal((await doctor(env)).code, 0, "ready before");
      const restore = await unwritable(join(h.home, folder));
      try {
        const { code, lines } = await doctor(env);
        assert.equal(code, 1);
        assert.match(
          line(lines, subject),
          new RegExp(
            `^✗ ${subject}: cannot write in ${join(h.home, folder)} \\(.+\\): .*make it writable ` +
              "by the user the gateway runs as, or set AGENT_HOME",
          ),
        );
      } finally {
        await restore();
      }
    },
  });
}

Deno.test("doctor says a malformed config.yaml and a disabled platform, and is listed by agent --help", async () => {
  await using h = await tempHome({ config: "platforms: [\n" });
  const malformed = await doctor({ AGENT_HOME: h.home });
  assert.equal(malformed.code, 1);
  assert.match(malformed.lines[0], /^✗ config: .*config\.yaml/);

  await Deno.writeTextFile(
    join(h.home, "config.yaml"),
    "platforms:\n  webhook:\n    enabled: false\n",
  );
  const disabled = await doctor({ AGENT_HOME: h.home });
  assert.equal(disabled.code, 1);
  assert.match(
    line(disabled.lines, "config"),
    /^✗ config: webhooks are not enabled \(platforms\.webhook\.enabled in .*config\.yaml\): run agent gateway setup/,
  );

  const help = fakeContext({});
  assert.equal(await runCommand(["--help"], help), 0);
  assert.match(help.output(), /agent doctor\s+Check the agent provider/);
});

Deno.test("doctor fails a subscription whose secret no sender can meet, as list and the gateway warn", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  await subscriptions(h.home, {
    empty: { secret: "" },
    accented: { secret: "gl-tökén-secret" },
    signed: { secret: "gl-tökén-secret", auth: "github" },
  });
  const { code, lines } = await doctor({ AGENT_HOME: h.home, OPENAI_API_KEY: OPENAI_KEY });
  assert.equal(code, 1);
  assert.match(line(lines, 'subscription "empty"'), /^✗ .*no secret.*403/);
  assert.match(line(lines, 'subscription "accented"'), /^✗ .*no header can carry.*401/);
  assert.match(line(lines, 'subscription "signed"'), /^✓ /, "a GitHub signature carries it");
});
