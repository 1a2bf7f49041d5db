import assert from "node:assert/strict";
import { join } from "node:path";
import { parseEnv } from "node:util";
import { runCommand } from "../../commands/mod.ts";
import { loadConfig } from "../../lib/config/mod.ts";
import { UsageError } from "../../lib/errors.ts";
import { fakeContext, tempHome } from "../_helpers.ts";

const COMMENTED = `# my settings, keep this comment
platforms:
  webhook:
    enabled: false   # turned on by setup
    extra:
      port: 9000
      custom_key: keep-me
other_tool:
  setting: 1
`;

Deno.test("setup with flags enables the platform and keeps comments and unknown keys", async () => {
  await using h = await tempHome({ config: COMMENTED });
  const ctx = fakeContext({ AGENT_HOME: h.home });
  const code = await runCommand(
    ["gateway", "setup", "--enable", "--host", "0.0.0.0", "--port", "8700", "--generate-secret"],
    ctx,
  );
  assert.equal(code, 0);
  const text = await Deno.readTextFile(join(h.home, "config.yaml"));
  assert.match(text, /# my settings, keep this comment/);
  assert.match(text, /# turned on by setup/);
  assert.match(text, /custom_key: keep-me/);
  assert.match(text, /other_tool:\n {2}setting: 1/);
  const config = await loadConfig({ AGENT_HOME: h.home });
  assert.equal(config.webhook.enabled, true);
  assert.equal(config.webhook.host, "0.0.0.0");
  assert.equal(config.webhook.port, 8700);
  assert.match(config.webhook.secret!, /^[A-Za-z0-9_-]{43}$/);
  assert.equal((await Deno.stat(join(h.home, "config.yaml"))).mode! & 0o777, 0o600);
});

Deno.test("setup records tokens and home channels in .env with mode 0600", async () => {
  await using h = await tempHome({ env: "# mine\nOTHER=1\n" });
  const ctx = fakeContext({ AGENT_HOME: h.home });
  await runCommand(
    ["gateway", "setup", "--yes", "--telegram-token", "123:abc", "--telegram-home=-100200"],
    ctx,
  );
  const path = join(h.home, ".env");
  const text = await Deno.readTextFile(path);
  assert.match(text, /# mine\nOTHER=1\n/);
  assert.deepEqual(
    { ...parseEnv(text) },
    { OTHER: "1", TELEGRAM_BOT_TOKEN: "123:abc", TELEGRAM_HOME_CHANNEL: "-100200" },
  );
  assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
});

Deno.test("setup refuses a home channel of the wrong shape for its platform, as --deliver-chat-id, and writes nothing", async () => {
  await using h = await tempHome({ env: "# mine\n" });
  for (
    const [flag, value, reason] of [
      [
        "--telegram-home",
        "-100123:xyz",
        /--telegram-home "-100123:xyz": a Telegram topic must be a message thread id/,
      ],
      ["--discord-home", "general", /--discord-home "general": a Discord channel id is a number/],
      [
        "--slack-home",
        "C1:later",
        /--slack-home "C1:later": a Slack thread is a message timestamp/,
      ],
    ] as const
  ) {
    await assert.rejects(
      () =>
        runCommand(["gateway", "setup", "--yes", flag, value], fakeContext({ AGENT_HOME: h.home })),
      (error: Error) => error instanceof UsageError && reason.test(error.message),
    );
  }
  assert.equal(await Deno.readTextFile(join(h.home, ".env")), "# mine\n");
  await assert.rejects(Deno.stat(join(h.home, "config.yaml")), Deno.errors.NotFound);
});

Deno.test("setup without a terminal and without flags is a usage error", async () => {
  await using h = await tempHome();
  await assert.rejects(
    () => runCommand(["gateway", "setup"], fakeContext({ AGENT_HOME: h.home })),
    (error: Error) => error instanceof UsageError && /--yes/.test(error.message),
  );
});

Deno.test("setup refuses a bad port and leaves config.yaml untouched", async () => {
  await using h = await tempHome({ config: COMMENTED });
  await assert.rejects(
    () => runCommand(["gateway", "setup", "--port", "99999"], fakeContext({ AGENT_HOME: h.home })),
    /from 1 to 65535/,
  );
  assert.equal(await Deno.readTextFile(join(h.home, "config.yaml")), COMMENTED);
});

Deno.test("setup asks on a terminal, re-asks a bad answer, and takes the defaults on Enter", async () => {
  await using h = await tempHome();
  const ctx = fakeContext({ AGENT_HOME: h.home }, {
    terminal: true,
    input: ["", "bad host!", "", "abc", "8645", "", "telegram", "9:tok", "42"],
  });
  assert.equal(await runCommand(["gateway", "setup"], ctx), 0);
  assert.match(ctx.output(), /The host must be a host name or an IP address/);
  assert.match(ctx.output(), /Port must be a whole number/);
  const config = await loadConfig({ AGENT_HOME: h.home });
  assert.equal(config.webhook.enabled, true);
  assert.equal(config.webhook.host, "127.0.0.1");
  assert.equal(config.webhook.port, 8645);
  assert.equal(config.webhook.secret?.length, 43);
  assert.equal(config.env.TELEGRAM_BOT_TOKEN, "9:tok");
  assert.equal(config.env.TELEGRAM_HOME_CHANNEL, "42");
});

Deno.test("setup's summary prints a generated secret, not a given one, and brackets an IPv6 host", async () => {
  await using h = await tempHome();
  const run = async (...flags: string[]) => {
    const ctx = fakeContext({ AGENT_HOME: h.home });
    assert.equal(await runCommand(["gateway", "setup", ...flags], ctx), 0);
    return ctx.output();
  };
  assert.match(await run("--enable", "--host", "::"), /listen: +\[::\]:8644\n +secret: +\(none\)/);
  assert.match(await run("--host", "[::1]"), /listen: +\[::1\]:8644\n/, "brackets once");
  const generated = await run("--generate-secret");
  const secret = (await loadConfig({ AGENT_HOME: h.home }, { fileOnly: true })).webhook.secret!;
  assert.match(generated, new RegExp(`secret: +${secret}\n`));
  assert.match(await run("--port", "8700"), /secret: +\(unchanged\)/);
  const given = await run("--secret", "given-secret-1");
  assert.match(given, /secret: +\(set to the one given; not shown\)/);
  assert.doesNotMatch(given, /given-secret-1/);
});

Deno.test("setup asks for a typed secret twice, and again when the two differ", async () => {
  await using h = await tempHome();
  const ctx = fakeContext({ AGENT_HOME: h.home }, {
    terminal: true,
    input: ["", "", "", "secret-one-1", "secret-two-2", "secret-one-1", "secret-one-1", ""],
  });
  assert.equal(await runCommand(["gateway", "setup"], ctx), 0);
  assert.match(ctx.output(), /The two secrets differ: type it again/);
  const config = await loadConfig({ AGENT_HOME: h.home });
  assert.equal(config.webhook.secret, "secret-one-1");
});

Deno.test("setup says when it leaves out blanks pasted around a secret it does not show", async () => {
  await using h = await tempHome();
  const ctx = fakeContext({ AGENT_HOME: h.home }, {
    terminal: true,
    input: ["", "", "", " secret-one-1 ", "secret-one-1", ""],
  });
  assert.equal(await runCommand(["gateway", "setup"], ctx), 0);
  assert.equal(
    ctx.output().split("(the blanks around what was typed are left out)").length,
    2,
    "said once, for the first of the two",
  );
  assert.equal((await loadConfig({ AGENT_HOME: h.home })).webhook.secret, "secret-one-1");
});

Deno.test("setup changes only what its flags name: tokens alone keep a disabled platform off", async () => {
  await using h = await tempHome();
  const env = { AGENT_HOME: h.home, WEBHOOK_HOST: "0.0.0.0", WEBHOOK_PORT: "9999" };
  await runCommand(["gateway", "setup", "--disable"], fakeContext(env));
  await runCommand(["gateway", "setup", "--slack-home", "C1"], fakeContext(env));
  const config = await loadConfig({ AGENT_HOME: h.home });
  assert.equal(config.webhook.enabled, false);
  assert.equal(config.env.SLACK_HOME_CHANNEL, "C1");
  const text = await Deno.readTextFile(join(h.home, "config.yaml"));
  assert.doesNotMatch(text, /0\.0\.0\.0|9999/, "environment overrides are not saved");
});

Deno.test("setup says when WEBHOOK_* in .env overrides what it wrote, and refuses a bad host", async () => {
  await using h = await tempHome({ env: "WEBHOOK_ENABLED=false\nWEBHOOK_PORT=9100\n" });
  const ctx = fakeContext({ AGENT_HOME: h.home });
  assert.equal(await runCommand(["gateway", "setup", "--enable", "--port", "8700"], ctx), 0);
  const out = ctx.output();
  assert.match(out, /webhooks: enabled/);
  assert.match(
    out,
    /Note: WEBHOOK_ENABLED in the environment or .*\.env overrides this: the gateway will use disabled\./,
  );
  assert.match(out, /Note: WEBHOOK_PORT .* will use 9100\./);
  assert.doesNotMatch(out, /A gateway is running/);
  assert.doesNotMatch(out, /WEBHOOK_SECRET/, "no secret set anywhere: nothing overridden");

  // A secret just generated, which senders would sign with, loses to .env's.
  await Deno.writeTextFile(join(h.home, ".env"), "WEBHOOK_SECRET=old-env-secret\n");
  const secret = fakeContext({ AGENT_HOME: h.home });
  assert.equal(await runCommand(["gateway", "setup", "--generate-secret", "--yes"], secret), 0);
  assert.match(
    secret.output(),
    /Note: WEBHOOK_SECRET in the environment or .*\.env overrides this: the gateway will use its secret \(not shown\)\./,
  );
  assert.doesNotMatch(secret.output(), /old-env-secret/);

  await assert.rejects(
    runCommand(["gateway", "setup", "--host", "bad!"], fakeContext({ AGENT_HOME: h.home })),
    (error: Error) =>
      error instanceof UsageError && /host name or an IP address/.test(error.message),
  );
  assert.doesNotMatch(await Deno.readTextFile(join(h.home, "config.yaml")), /bad!/);
});

Deno.test("setup refuses a global secret shorter than 8 characters, as subscribe does", async () => {
  await using h = await tempHome({ config: COMMENTED });
  await assert.rejects(
    runCommand(["gateway", "setup", "--secret", "short"], fakeContext({ AGENT_HOME: h.home })),
    (error: Error) => error instanceof UsageError && /at least 8 characters/.test(error.message),
  );
  assert.equal(await Deno.readTextFile(join(h.home, "config.yaml")), COMMENTED);
});

Deno.test("setup writes what it was asked and says so, even when another setting is invalid", async () => {
  await using h = await tempHome({ env: "WEBHOOK_PORT=abc\n" });
  const ctx = fakeContext({ AGENT_HOME: h.home });
  assert.equal(await runCommand(["gateway", "setup", "--enable", "--port", "9000"], ctx), 0);
  assert.match(ctx.output(), /Wrote .*config\.yaml/);
  assert.match(ctx.output(), /Note: the gateway will not start until this is fixed: WEBHOOK_PORT/);
  assert.match(await Deno.readTextFile(join(h.home, "config.yaml")), /port: 9000/);
});

Deno.test("setup stops at once at the end of input, without asking again", async () => {
  await using h = await tempHome();
  const ctx = fakeContext({ AGENT_HOME: h.home }, { terminal: true, input: [""] });
  await assert.rejects(runCommand(["gateway", "setup"], ctx), /Setup cancelled/);
  assert.equal(ctx.output().match(/Listen host/g)?.length, 1, ctx.output());
});
