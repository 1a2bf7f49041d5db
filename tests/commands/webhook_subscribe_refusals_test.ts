/** What `agent webhook subscribe` refuses, and what it warns of and stores anyway. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runCommand } from "../../commands/mod.ts";
import { UsageError } from "../../lib/errors.ts";
import { readSubscriptions } from "../../lib/subscriptions/file_store.ts";
import { enabledConfig, fakeContext, tempHome } from "../_helpers.ts";

const STATIC = enabledConfig(
  8644,
  "      routes:\n        ci-alerts: {events: [pipeline], deliver: log}\n",
);

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
  // With the agent's key: subscribe would warn of its absence too.
  await using h = await tempHome({ config: enabledConfig(), env: "OPENAI_API_KEY=sk-test-key\n" });
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
  // With the agent's key: subscribe would warn of its absence too.
  await using h = await tempHome({ config: enabledConfig(), env: "OPENAI_API_KEY=sk-test-key\n" });
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

Deno.test("subscribe warns of a secret no header can carry when no scheme is pinned, and stores it", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const path = join(h.home, "webhook_subscriptions.json");
  const ctx = fakeContext({ AGENT_HOME: h.home });
  await runCommand(["webhook", "subscribe", "gl", "--secret", "gl-tökén"], ctx);
  assert.equal((await readSubscriptions(path)).gl.secret, "gl-tökén");
  assert.ok(
    ctx.err.includes(
      "Warning: the secret has characters no header can carry (outside ASCII, control " +
        "characters, or blanks at its ends): GitLab and Bearer senders, which send it as a " +
        "header, would always get 401. If the sender signs with it (GitHub, Stripe...), pin " +
        "that scheme with --auth; else give an ASCII --secret",
    ),
    ctx.err.join("\n"),
  );
  // Pinned to a scheme that signs with it, the secret never travels in a header.
  const pinned = fakeContext({ AGENT_HOME: h.home });
  await runCommand(["webhook", "subscribe", "gl", "--auth", "github"], pinned);
  assert.doesNotMatch(pinned.err.join("\n"), /no header can carry/);
});

Deno.test("subscribe says so when it gives a hand-edited record without a secret a new one", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const path = join(h.home, "webhook_subscriptions.json");
  await Deno.writeTextFile(
    path,
    JSON.stringify({ empty: { secret: "" }, none: { deliver: "log" }, kept: { secret: "" } }),
  );
  for (const [name, had] of [["empty", "an empty one"], ["none", "none in the file"]]) {
    const ctx = fakeContext({ AGENT_HOME: h.home });
    await runCommand(["webhook", "subscribe", name, "--description", "x"], ctx);
    const secret = (await readSubscriptions(path))[name].secret!;
    assert.equal(secret.length, 43, "a generated secret");
    assert.ok(
      ctx.err.includes(
        `Warning: it had no secret (${had}), so the gateway refused every request with 403: a ` +
          "new one was generated (printed below); give it to the sender",
      ),
      ctx.err.join("\n"),
    );
    assert.match(ctx.output(), new RegExp(`Secret:\\s+${secret}`));
  }
  // A --secret given is no surprise.
  const given = fakeContext({ AGENT_HOME: h.home });
  await runCommand(["webhook", "subscribe", "kept", "--secret", "given-secret-1"], given);
  assert.doesNotMatch(given.err.join("\n"), /had no secret/);
});
