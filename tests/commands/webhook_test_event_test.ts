import assert from "node:assert/strict";
import { join } from "node:path";
import { runCommand } from "../../commands/mod.ts";
import { UsageError } from "../../lib/errors.ts";
import { readSubscriptions } from "../../lib/subscriptions/file_store.ts";
import { createSignatureVerifier } from "../../lib/signatures/mod.ts";
import { Webhook as StandardWebhook } from "standardwebhooks";
import { enabledConfig, fakeContext, runCli, tempHome } from "../_helpers.ts";

const STATIC = enabledConfig(
  8644,
  "      routes:\n        ci-alerts: {events: [pipeline], deliver: log}\n",
);

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

Deno.test("subscribe refuses bad names with the rule in the message", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  for (const name of ["My Hook", "-x", "a/b", "..", "x".repeat(65), "UPPER"]) {
    await assert.rejects(
      () => runCommand(["webhook", "subscribe", name], fakeContext({ AGENT_HOME: h.home })),
      (error: Error) =>
        error instanceof UsageError && error.message.includes("^[a-z0-9][a-z0-9_-]{0,63}$"),
      name,
    );
  }
});

Deno.test("subscribe refuses --deliver-only with log or no target, and unknown targets", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const run = (...args: string[]) =>
    runCommand(["webhook", "subscribe", "x", ...args], fakeContext({ AGENT_HOME: h.home }));
  await assert.rejects(() => run("--deliver-only"), UsageError);
  await assert.rejects(() => run("--deliver-only", "--deliver", "log"), UsageError);
  await assert.rejects(() => run("--deliver", "pigeon"), /telegram/);
  await assert.rejects(() => run("--deliver", "telegram"), /chat/i);
  assert.deepEqual(await readSubscriptions(join(h.home, "webhook_subscriptions.json")), {});
});

Deno.test("subscribe and remove refuse a name defined as a static route in config.yaml", async () => {
  await using h = await tempHome({ config: STATIC });
  await assert.rejects(
    () => runCommand(["webhook", "subscribe", "ci-alerts"], fakeContext({ AGENT_HOME: h.home })),
    /defined in config\.yaml/,
  );
  await assert.rejects(
    () => runCommand(["webhook", "remove", "ci-alerts"], fakeContext({ AGENT_HOME: h.home })),
    /defined in config\.yaml/,
  );
});

Deno.test("list shows dynamic subscriptions and static routes with URL, events, target, secret", async () => {
  await using h = await tempHome({
    config: STATIC.replace("enabled: true", "enabled: true\n    extra_unused: 1"),
  });
  const env = { AGENT_HOME: h.home, WEBHOOK_SECRET: "global-secret-xyz" };
  await runCommand(
    ["webhook", "subscribe", "gh", "--secret", "my-secret-123", "--events", "issues"],
    fakeContext(env),
  );
  const ctx = fakeContext(env);
  assert.equal(await runCommand(["webhook", "list"], ctx), 0);
  const text = ctx.output();
  assert.match(text, /ci-alerts\s+\[static, config\.yaml\]/);
  assert.match(text, /global-secret-xyz \(global secret\)/);
  assert.match(text, /gh\n\s+URL:\s+http:\/\/localhost:8644\/webhooks\/gh\n\s+Events:\s+issues/);
  assert.match(text, /Secret:\s+my-secret-123/);

  const json = fakeContext(env);
  await runCommand(["webhook", "list", "--json"], json);
  const rows = JSON.parse(json.output());
  assert.deepEqual(rows.map((r: { name: string }) => r.name), ["ci-alerts", "gh"]);
  assert.equal(rows[1].webhook_url, "http://localhost:8644/webhooks/gh");
  assert.equal(rows[1].secret, "my-secret-123");
});

Deno.test("list warns of a subscription that a static route of the same name hides", async () => {
  await using h = await tempHome({ config: STATIC });
  await Deno.writeTextFile(
    join(h.home, "webhook_subscriptions.json"),
    JSON.stringify({ "ci-alerts": { secret: "hidden-secret-1" }, gh: { secret: "gh-secret-1" } }),
  );
  const ctx = fakeContext({ AGENT_HOME: h.home });
  assert.equal(await runCommand(["webhook", "list"], ctx), 0);
  assert.match(
    ctx.err.join("\n"),
    /Warning: subscription "ci-alerts" in .*webhook_subscriptions\.json is never served: config\.yaml has a static route of that name/,
  );
  assert.doesNotMatch(ctx.out.join("\n"), /hidden-secret-1/);
  assert.match(ctx.out.join("\n"), /ci-alerts\s+\[static, config\.yaml\]/);
});

Deno.test("a home the CLI cannot write to gets an error naming the file, without a stack trace", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const env = { AGENT_HOME: h.home };
  // A folder where the lock file should be: refused even to root, as a read-only home is to
  // a user.
  await Deno.mkdir(join(h.home, "webhook_subscriptions.json.lock"));
  const subscribed = await runCli(["webhook", "subscribe", "gh"], env);
  assert.equal(subscribed.code, 1);
  assert.match(
    subscribed.stderr,
    /^Error: Cannot write .*webhook_subscriptions\.json: Is a directory/,
  );
  assert.doesNotMatch(subscribed.stderr, /\n\s+at /);
  await Deno.mkdir(join(h.home, "config.yaml.lock"));
  const setup = await runCli(["gateway", "setup", "--port", "8700"], env);
  assert.equal(setup.code, 1);
  assert.match(setup.stderr, /^Error: Cannot write .*config\.yaml: /);
  assert.doesNotMatch(setup.stderr, /\n\s+at /);
  await Deno.mkdir(join(h.home, ".env"));
  const token = await runCli(["gateway", "setup", "--telegram-token", "1:x"], env);
  assert.equal(token.code, 1);
  assert.match(token.stderr, /^Error: Cannot read .*\.env: /);
  assert.doesNotMatch(token.stderr, /\n\s+at /);
  // The first command the README has users run, in a home where no file can be created.
  if (Deno.build.os === "linux") {
    const run = await runCli(["gateway", "run"], { AGENT_HOME: "/proc/1" });
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^Error: Cannot write \/proc\/1\/config\.yaml: /);
    assert.doesNotMatch(run.stderr, /\n\s+at /);
  }
});

Deno.test("subscribe refuses a flag given twice and numbers that are not plain digits", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const env = { AGENT_HOME: h.home };
  const cases: [string[], RegExp][] = [
    [["--events", "issues", "--events", "push"], /--events is given 2 times .*comma-separated/],
    [
      ["--deliver-only", "--no-deliver-only"],
      /--deliver-only is given 2 times \(--deliver-only, --no-deliver-only\)/,
    ],
    [
      ["--deliver", "slack", "--deliver", "discord"],
      /--deliver is given 2 times [^\n]*give it once\n/,
    ],
    [["--rate-limit", "0x10"], /--rate-limit must be a whole number/],
    [["--rate-limit", "1e3"], /--rate-limit must be a whole number/],
  ];
  for (const [flags, message] of cases) {
    await assert.rejects(
      runCommand(["webhook", "subscribe", "gh", ...flags], fakeContext(env)),
      (error: Error) => error instanceof UsageError && message.test(error.message),
      flags.join(" "),
    );
  }
  assert.deepEqual(await readSubscriptions(join(h.home, "webhook_subscriptions.json")), {});
  // Once each, both forms work.
  await runCommand(["webhook", "subscribe", "gh", "--rate-limit", "16"], fakeContext(env));
  const records = await readSubscriptions(join(h.home, "webhook_subscriptions.json"));
  assert.equal(records.gh.rate_limit, 16);
});

Deno.test("webhook commands print config.yaml's unknown keys as warnings and go on", async () => {
  await using h = await tempHome({ config: enabledConfig(8644, "      prot: 9999\n") });
  const ctx = fakeContext({ AGENT_HOME: h.home });
  assert.equal(await runCommand(["webhook", "list"], ctx), 0);
  assert.match(
    ctx.err.join("\n"),
    /^Warning: platforms\.webhook\.extra\.prot in .*config\.yaml is not a setting/,
  );
});

/**
 * Whether this process may mount a tmpfs (root on Linux, where the sandbox allows it): the
 * full-disk test needs one. Tried once, for real.
 */
const canMount = await (async () => {
  if (Deno.build.os !== "linux" || Deno.uid() !== 0) return false;
  const dir = await Deno.makeTempDir({ prefix: "agent-mount-probe-" });
  const run = (...args: string[]) =>
    new Deno.Command(args[0], { args: args.slice(1), stdout: "null", stderr: "null" }).output()
      .then((o) => o.success, () => false);
  const mounted = await run("mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", dir);
  if (mounted) await run("umount", dir);
  await Deno.remove(dir);
  return mounted;
})();

Deno.test({
  name: "a full disk gets 'Cannot write <file>: No space left', without a stack trace",
  ignore: !canMount,
  async fn() {
    const disk = await Deno.makeTempDir({ prefix: "agent-full-" });
    const mount = (args: string[]) => new Deno.Command(args[0], { args: args.slice(1) }).output();
    assert.ok((await mount(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", disk])).success);
    try {
      const env = { AGENT_HOME: join(disk, "home") };
      await Deno.mkdir(env.AGENT_HOME);
      await Deno.writeTextFile(join(env.AGENT_HOME, "config.yaml"), enabledConfig());
      assert.equal((await runCli(["webhook", "subscribe", "first"], env)).code, 0);
      const file = join(env.AGENT_HOME, "webhook_subscriptions.json");
      const before = await Deno.readTextFile(file);
      // Fill the disk.
      await Deno.writeFile(join(disk, "filler"), new Uint8Array(256 * 1024)).catch(() => {});
      const result = await runCli(["webhook", "subscribe", "second"], env);
      assert.equal(result.code, 1);
      assert.match(result.stderr, /^Error: Cannot write .*webhook_subscriptions\.json: No space/);
      assert.doesNotMatch(result.stderr, /\n\s+at /);
      assert.equal(await Deno.readTextFile(file), before, "the file is as it was");
    } finally {
      await mount(["umount", disk]);
      await Deno.remove(disk, { recursive: true });
    }
  },
});

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

Deno.test("every webhook command answers a disabled platform with the three ways to enable it", async () => {
  await using h = await tempHome();
  for (const args of [["list"], ["subscribe", "x"], ["remove", "x"], ["test", "x"]]) {
    const ctx = fakeContext({ AGENT_HOME: h.home });
    assert.equal(await runCommand(["webhook", ...args], ctx), 1, args.join(" "));
    const message = ctx.err.join("\n");
    assert.match(message, /Webhook platform is not enabled/);
    assert.match(message, /agent gateway setup/);
    assert.match(message, /config\.yaml/);
    assert.match(message, /WEBHOOK_ENABLED=true/);
  }
});

Deno.test("test explains a refused connection", async () => {
  await using h = await tempHome({ config: enabledConfig(1) });
  const env = { AGENT_HOME: h.home };
  await runCommand(["webhook", "subscribe", "gh"], fakeContext(env));
  const ctx = fakeContext(env);
  assert.equal(await runCommand(["webhook", "test", "gh"], ctx), 1);
  assert.match(ctx.err.join("\n"), /is the gateway running\? Start it with: agent gateway run/i);
});

Deno.test("test names a hand-edited auth that is no scheme instead of sending", async () => {
  await using h = await tempHome({ config: enabledConfig(1) });
  const env = { AGENT_HOME: h.home };
  await runCommand(["webhook", "subscribe", "gh"], fakeContext(env));
  const file = join(h.home, "webhook_subscriptions.json");
  const records = JSON.parse(await Deno.readTextFile(file));
  records.gh.auth = "svix";
  await Deno.writeTextFile(file, JSON.stringify(records));
  const ctx = fakeContext(env);
  assert.equal(await runCommand(["webhook", "test", "gh"], ctx), 1);
  assert.match(
    ctx.err.join("\n"),
    /subscription "gh" in .*: auth: unknown signature scheme "svix"; valid schemes: github,.*so the gateway refuses its requests/,
  );
  assert.doesNotMatch(ctx.err.join("\n"), /is the gateway running/, "nothing was sent");
  // The other commands go on: the file is readable.
  const list = fakeContext(env);
  assert.equal(await runCommand(["webhook", "list"], list), 0);
  assert.match(
    list.err.join("\n"),
    /Warning: subscription "gh" .*the gateway refuses its requests until it is fixed/,
  );
});

Deno.test("a hand-edited field of the wrong type spoils only its record, for every command", async () => {
  await using h = await tempHome({ config: enabledConfig(1) });
  const env = { AGENT_HOME: h.home };
  await runCommand(["webhook", "subscribe", "gh"], fakeContext(env));
  await runCommand(["webhook", "subscribe", "ok"], fakeContext(env));
  const file = join(h.home, "webhook_subscriptions.json");
  const records = JSON.parse(await Deno.readTextFile(file));
  records.gh.events = "issues";
  await Deno.writeTextFile(file, JSON.stringify(records));
  const problem = /subscription "gh" in .*: events must be a list of strings/;

  const list = fakeContext(env);
  assert.equal(await runCommand(["webhook", "list"], list), 0);
  assert.match(list.err.join("\n"), problem);
  assert.match(list.output(), /^ok$/m);
  assert.doesNotMatch(list.output(), /^gh$/m);
  const test = fakeContext(env);
  assert.equal(await runCommand(["webhook", "test", "gh"], test), 1);
  assert.match(test.err.join("\n"), problem);
  await assert.rejects(
    () => runCommand(["webhook", "rotate-secret", "gh"], fakeContext(env)),
    /events must be a list of strings; fix that field in the file first/,
  );
  await assert.rejects(
    () => runCommand(["webhook", "subscribe", "gh", "--deliver", "log"], fakeContext(env)),
    /events must be a list of strings; fix it in the file, or give it anew with its flag/,
  );
  // A field read before the check was a TypeError with a stack trace.
  const deliverTyped = { ...records, gh: { ...records.gh, deliver: 5 } };
  await Deno.writeTextFile(file, JSON.stringify(deliverTyped));
  await assert.rejects(
    () => runCommand(["webhook", "subscribe", "gh", "--prompt", "hi"], fakeContext(env)),
    /subscription "gh" in .*: deliver must be a string; fix it in the file/,
  );
  await Deno.writeTextFile(file, JSON.stringify(records));
  // Other subscriptions change as usual, and the bad record is written back as it was.
  assert.equal(await runCommand(["webhook", "rotate-secret", "ok"], fakeContext(env)), 0);
  assert.equal(JSON.parse(await Deno.readTextFile(file)).gh.events, "issues");
  // Giving the field anew repairs it, keeping the secret.
  assert.equal(
    await runCommand(["webhook", "subscribe", "gh", "--events", "issues"], fakeContext(env)),
    0,
  );
  const repaired = JSON.parse(await Deno.readTextFile(file)).gh;
  assert.deepEqual([repaired.events, repaired.secret], [["issues"], records.gh.secret]);
  // A creation time of the wrong type has no flag: subscribe sets it anew.
  const timed = JSON.parse(await Deno.readTextFile(file));
  timed.gh.created_at = 5;
  await Deno.writeTextFile(file, JSON.stringify(timed));
  assert.equal(await runCommand(["webhook", "subscribe", "gh"], fakeContext(env)), 0);
  assert.match(JSON.parse(await Deno.readTextFile(file)).gh.created_at, /^\d{4}-\d\d-\d\dT/);
  records.gh.events = 7;
  await Deno.writeTextFile(file, JSON.stringify(records));
  assert.equal(await runCommand(["webhook", "remove", "gh"], fakeContext(env)), 0);
  assert.deepEqual(Object.keys(JSON.parse(await Deno.readTextFile(file))), ["ok"]);
});

Deno.test("test reports template paths the payload does not have", async () => {
  await using h = await tempHome({ config: enabledConfig(1) });
  const env = { AGENT_HOME: h.home };
  await runCommand(
    ["webhook", "subscribe", "gh", "--prompt", "{issue.title} {issue.nope}"],
    fakeContext(env),
  );
  const ctx = fakeContext(env);
  await runCommand(["webhook", "test", "gh", "--payload", '{"issue":{"title":"t"}}'], ctx);
  assert.match(ctx.err.join("\n"), /no \{issue\.nope\}/);
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

Deno.test("the CLI exits 2 on usage errors and 1 on a corrupt subscription file", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const usage = await runCli(["webhook", "subscribe", "gh", "--bogus"], { AGENT_HOME: h.home });
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /Unknown option --bogus\./);
  await Deno.writeTextFile(join(h.home, "webhook_subscriptions.json"), "[1,");
  const corrupt = await runCli(["webhook", "subscribe", "gh"], { AGENT_HOME: h.home });
  assert.equal(corrupt.code, 1);
  assert.match(corrupt.stderr, /webhook_subscriptions\.json is corrupt/);
  assert.equal(await Deno.readTextFile(join(h.home, "webhook_subscriptions.json")), "[1,");
});

Deno.test("subscribe stores --auth and --rate-limit, and refuses bad values", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const env = { AGENT_HOME: h.home };
  await runCommand(
    ["webhook", "subscribe", "alerts", "--auth", "bearer", "--rate-limit", "600"],
    fakeContext(env),
  );
  const record = (await readSubscriptions(join(h.home, "webhook_subscriptions.json"))).alerts;
  assert.equal(record.auth, "bearer");
  assert.equal(record.rate_limit, 600);
  await assert.rejects(
    () => runCommand(["webhook", "subscribe", "alerts", "--auth", "md5"], fakeContext(env)),
    /--auth must be one of: github, gitlab/,
  );
  await assert.rejects(
    () => runCommand(["webhook", "subscribe", "alerts", "--rate-limit", "0"], fakeContext(env)),
    /--rate-limit must be a whole number/,
  );
});

Deno.test("subscribe refuses unknown skills with the list of installed ones", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const skill = join(h.home, "skills", "triage");
  await Deno.mkdir(skill, { recursive: true });
  await Deno.writeTextFile(
    join(skill, "SKILL.md"),
    "---\nname: triage\ndescription: Label and prioritise issues\n---\nLabel the issue.\n",
  );
  const env = { AGENT_HOME: h.home };
  await assert.rejects(
    () => runCommand(["webhook", "subscribe", "gh", "--skills", "triage,deploy"], fakeContext(env)),
    /Unknown skill deploy\. Installed skills: triage/,
  );
  assert.equal(
    await runCommand(["webhook", "subscribe", "gh", "--skills", "triage"], fakeContext(env)),
    0,
  );
  const record = (await readSubscriptions(join(h.home, "webhook_subscriptions.json"))).gh;
  assert.deepEqual(record.skills, ["triage"]);
});

Deno.test("the CLI narrows a .env and a subscription file readable by others to 0600", async () => {
  await using h = await tempHome({ config: enabledConfig(), env: "TELEGRAM_BOT_TOKEN=1:x\n" });
  const envFile = join(h.home, ".env");
  const subscriptions = join(h.home, "webhook_subscriptions.json");
  await Deno.writeTextFile(subscriptions, "{}");
  await Deno.chmod(envFile, 0o644);
  await Deno.chmod(subscriptions, 0o644);
  await runCommand(["webhook", "list"], fakeContext({ AGENT_HOME: h.home }));
  assert.equal((await Deno.stat(envFile)).mode! & 0o777, 0o600);
  assert.equal((await Deno.stat(subscriptions)).mode! & 0o777, 0o600);
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

Deno.test("agent webhook --help and agent gateway list their commands", async () => {
  const help = fakeContext({});
  assert.equal(await runCommand(["webhook", "--help"], help), 0);
  assert.match(help.output(), /agent webhook subscribe +Create or update/);
  assert.match(help.output(), /agent webhook replay +Run a stored event again/);
  assert.doesNotMatch(help.output(), /agent gateway/);
  const bare = fakeContext({});
  assert.equal(await runCommand(["gateway"], bare), 2, "a group alone is a usage error");
  assert.match(bare.output(), /agent gateway run +Start the webhook gateway/);
  await assert.rejects(runCommand(["webhook", "subscrib"], fakeContext({})), UsageError);
});

Deno.test("help names the home folder AGENT_HOME sets, not ~/.agent", async () => {
  const env = { AGENT_HOME: "/srv/hooks" };
  const top = fakeContext(env);
  assert.equal(await runCommand(["--help"], top), 0);
  assert.match(top.output(), /Home folder: \/srv\/hooks \(from AGENT_HOME/);
  const run = fakeContext(env);
  assert.equal(await runCommand(["gateway", "run", "--help"], run), 0);
  assert.match(run.output(), /\/srv\/hooks\/logs\/gateway\.log/);
  assert.doesNotMatch(run.output(), /~\/\.agent/);
  const plain = fakeContext({});
  await runCommand(["gateway", "run", "--help"], plain);
  assert.match(plain.output(), /~\/\.agent\/logs\/gateway\.log/);
});

Deno.test("subscribe refuses an empty --events (an unset variable) and takes --events all", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const run = (args: string[]) => runCommand(args, fakeContext({ AGENT_HOME: h.home }));
  await run(["webhook", "subscribe", "gh", "--events", "issues"]);
  await assert.rejects(
    run(["webhook", "subscribe", "gh", "--events", ""]),
    (error: Error) => error instanceof UsageError && /--events is empty/.test(error.message),
  );
  const path = join(h.home, "webhook_subscriptions.json");
  assert.deepEqual((await readSubscriptions(path)).gh.events, ["issues"], "left as it was");
  await run(["webhook", "subscribe", "gh", "--events", "all"]);
  assert.deepEqual((await readSubscriptions(path)).gh.events, []);
});

Deno.test("subscribe warns of --events entries no event can match: a wildcard, or all among other types", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const ctx = fakeContext({ AGENT_HOME: h.home });
  await runCommand(["webhook", "subscribe", "gh", "--events", "issues.*,push,all"], ctx);
  const warnings = ctx.err.filter((line) => line.startsWith("Warning: --events"));
  assert.equal(warnings.length, 2, ctx.err.join("\n"));
  assert.match(warnings[0], /"issues\.\*" matches no event: types are compared whole/);
  assert.match(warnings[1], /"all" with other types is a type named "all"/);
  const plain = fakeContext({ AGENT_HOME: h.home });
  await runCommand(["webhook", "subscribe", "gh", "--events", "issues.opened,push"], plain);
  assert.deepEqual(plain.err, []);
});

Deno.test("subscribe refuses an empty --deliver (an unset variable) instead of storing a target the gateway refuses", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const run = (args: string[]) => runCommand(args, fakeContext({ AGENT_HOME: h.home }));
  await assert.rejects(
    run(["webhook", "subscribe", "gh", "--deliver", " "]),
    (error: Error) =>
      error instanceof UsageError &&
      /--deliver is empty: give one of log, telegram/.test(error.message),
  );
  const path = join(h.home, "webhook_subscriptions.json");
  assert.equal((await readSubscriptions(path)).gh, undefined, "nothing stored");
});

Deno.test("subscribe refuses a gitlab or bearer secret no header can carry, and warns of a Standard Webhooks secret without whsec_", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const path = join(h.home, "webhook_subscriptions.json");
  for (
    const [auth, secret] of [
      ["gitlab", "pässwörd-123"],
      ["gitlab", " padded-secret "],
      ["bearer", "line1\nline2xx"],
    ]
  ) {
    const ctx = fakeContext({ AGENT_HOME: h.home });
    await assert.rejects(
      runCommand(["webhook", "subscribe", "tok", "--auth", auth, "--secret", secret], ctx),
      (error: Error) =>
        error instanceof UsageError &&
        error.message.includes(`--auth ${auth} senders send the secret as a header`),
    );
    assert.equal((await readSubscriptions(path)).tok, undefined, "nothing stored");
  }
  // Spaces inside are carried as they are.
  await runCommand(
    ["webhook", "subscribe", "tok", "--auth", "gitlab", "--secret", "two words"],
    fakeContext({ AGENT_HOME: h.home }),
  );
  assert.equal((await readSubscriptions(path)).tok.secret, "two words");

  await runCommand(["webhook", "subscribe", "sw"], fakeContext({ AGENT_HOME: h.home }));
  const ctx = fakeContext({ AGENT_HOME: h.home });
  await runCommand(["webhook", "subscribe", "sw", "--auth", "standard"], ctx);
  assert.match(ctx.err.join("\n"), /Warning: the secret does not start with whsec_/);
  const quiet = fakeContext({ AGENT_HOME: h.home });
  await runCommand(["webhook", "subscribe", "sw", "--description", "x"], quiet);
  assert.deepEqual(quiet.err, [], "warned only when the secret or the scheme changes");
});

Deno.test("webhook test notes paths missing from the prompt and the chat id, and sends an id past 2^53 as written", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const env = { AGENT_HOME: h.home, TELEGRAM_BOT_TOKEN: "1:x" };
  await runCommand([
    "webhook",
    "subscribe",
    "tg",
    "--deliver",
    "telegram",
    "--deliver-only",
    "--deliver-chat-id",
    "{message.chat.id}",
    "--prompt",
    "id {id}, title {issue.title}",
  ], fakeContext(env));
  const bodies: string[] = [];
  const ctx = fakeContext(env, {
    fetch: (_url, init) => {
      bodies.push(String(init?.body));
      return Promise.resolve(Response.json({ status: "delivered" }, { status: 200 }));
    },
  });
  const payload = '{"id": 12345678901234567891}';
  assert.equal(await runCommand(["webhook", "test", "tg", "--payload", payload], ctx), 0);
  const notes = ctx.err.join("\n");
  assert.match(notes, /no \{issue\.title\}; these stay literally in the prompt/);
  assert.match(
    notes,
    /no \{message\.chat\.id\}; these stay literally in the chat id the message goes to/,
  );
  assert.equal(bodies.length, 1);
  assert.match(bodies[0], /"id":12345678901234567891[,}]/, "not rounded to 12345678901234567000");
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

Deno.test("an unknown option names the closest one", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const ctx = () => fakeContext({ AGENT_HOME: h.home });
  await assert.rejects(
    runCommand(["webhook", "subscribe", "gh", "--event", "issues"], ctx()),
    (error: Error) =>
      error instanceof UsageError &&
      error.message.startsWith("Unknown option --event. Did you mean --events?\n"),
  );
  await assert.rejects(
    runCommand(["webhook", "events", "--bogus"], ctx()),
    (error: Error) =>
      error instanceof UsageError && error.message.startsWith("Unknown option --bogus.\n"),
  );
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
