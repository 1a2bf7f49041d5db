/**
 * The command line as a whole: help, exit codes, and what every command shares (the enabled
 * check, configuration warnings, file errors without stack traces, hand-edited records).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runCommand } from "../../commands/mod.ts";
import { UsageError } from "../../lib/errors.ts";
import { enabledConfig, fakeContext, runCli, tempHome } from "../_helpers.ts";

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

Deno.test("an unknown command names the closest one, as an unknown option does", async () => {
  const unknown = async (argv: string[]) => {
    const error = await runCommand(argv, fakeContext({})).then(() => undefined, (e) => e);
    assert.ok(error instanceof UsageError, argv.join(" "));
    return error.message.split("\n")[0];
  };
  assert.equal(
    await unknown(["webhok", "list"]),
    'Unknown command: agent webhok list. Did you mean "agent webhook list"?',
  );
  assert.equal(
    await unknown(["webhook", "lst", "--json"]),
    'Unknown command: agent webhook lst. Did you mean "agent webhook list"?',
  );
  assert.equal(
    await unknown(["gatway", "--help"]),
    'Unknown command: agent gatway. Did you mean "agent gateway"?',
  );
  // Nothing within two edits: no guess, and the help follows as before.
  assert.equal(await unknown(["webhook", "bogus"]), "Unknown command: agent webhook bogus");
  assert.equal(await unknown(["deploy"]), "Unknown command: agent deploy");
});

Deno.test("agent --version prints the version deno.json gives", async () => {
  const { version } = JSON.parse(
    await Deno.readTextFile(new URL("../../deno.json", import.meta.url)),
  );
  for (const flag of ["--version", "-V"]) {
    const ctx = fakeContext({});
    assert.equal(await runCommand([flag], ctx), 0);
    assert.equal(ctx.output(), `agent ${version}`);
  }
  const help = fakeContext({});
  await runCommand(["--help"], help);
  assert.match(help.output(), /agent --version/);
});
