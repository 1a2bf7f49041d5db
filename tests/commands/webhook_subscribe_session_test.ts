/**
 * `agent webhook subscribe --session` (docs/subscriptions.md#conversations): what it stores,
 * what it refuses, what `webhook list` shows, the key `webhook test` says its payload renders,
 * and `config.yaml`'s routes and `session_ttl` checked alike.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runCommand } from "../../commands/mod.ts";
import { loadConfig } from "../../lib/config/mod.ts";
import { UsageError } from "../../lib/errors.ts";
import { readSubscriptions } from "../../lib/subscriptions/file_store.ts";
import { enabledConfig, fakeContext, tempHome } from "../_helpers.ts";
import { storedGh, subscribeGh } from "./_subscribe_gh.ts";

const KEY = "{repository.full_name}#{issue.number}";

Deno.test("subscribe --session stores the template and the budget, list shows them, '' removes both", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const ctx = await subscribeGh(h.home, ["--session", KEY]);
  assert.match(
    ctx.out.join("\n"),
    /Session: key \{repository\.full_name\}#\{issue\.number\}, earlier turns up to 4000 tokens/,
  );
  assert.equal((await storedGh(h.home)).session, KEY);
  await subscribeGh(h.home, ["--session-budget", "1500"]);
  const { session, session_budget } = await storedGh(h.home);
  assert.deepEqual({ session, session_budget }, { session: KEY, session_budget: 1500 });
  const list = fakeContext({ AGENT_HOME: h.home });
  await runCommand(["webhook", "list"], list);
  assert.match(
    list.out.join("\n"),
    /Session: {2}key \{repository\.full_name\}#\{issue\.number\}, earlier turns up to 1500 tokens/,
  );

  await subscribeGh(h.home, ["--session", ""]);
  const removed = await storedGh(h.home);
  assert.deepEqual([removed.session, removed.session_budget], [undefined, undefined]);
  const after = fakeContext({ AGENT_HOME: h.home });
  await runCommand(["webhook", "list"], after);
  assert.doesNotMatch(after.out.join("\n"), /Session:/);
});

Deno.test("subscribe refuses a budget without --session, a bad budget, and a session in direct mode", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const refused: [string[], RegExp][] = [
    [["--session-budget", "100"], /"gh": --session-budget needs --session '<template>'/],
    [
      ["--session", KEY, "--session-budget", "0"],
      /--session-budget must be a whole number of tokens \(≥ 1\), got "0"/,
    ],
    [["--session", KEY, "--session-budget", "1.5"], /got "1\.5"/],
    [
      ["--session", KEY, "--deliver-only", "--deliver", "slack:C1"],
      /--session keeps a conversation of agent runs, and a direct-delivery subscription has none/,
    ],
  ];
  for (const [args, message] of refused) {
    await assert.rejects(
      () => subscribeGh(h.home, args),
      (error: Error) => error instanceof UsageError && message.test(error.message),
      args.join(" "),
    );
  }
  assert.deepEqual(await readSubscriptions(join(h.home, "webhook_subscriptions.json")), {});
});

Deno.test("webhook test says the conversation key its payload renders, or why it has none", async () => {
  await using h = await tempHome({ config: enabledConfig(1) });
  const env = { AGENT_HOME: h.home };
  await subscribeGh(h.home, ["--session", KEY]);
  const notes = async (payload: string) => {
    const ctx = fakeContext(env, { fetch: () => Promise.reject(new Error("refused")) });
    await runCommand(["webhook", "test", "gh", "--payload", payload], ctx);
    return ctx.err.join("\n");
  };
  assert.match(
    await notes('{"repository":{"full_name":"octo/repo"},"issue":{"number":12}}'),
    /Session: this event's conversation key is "octo\/repo#12": its run gets the earlier turns/,
  );
  assert.match(
    await notes('{"repository":{"full_name":"octo/repo"}}'),
    /Session: \{repository\.full_name\}#\{issue\.number\} gives no key \(the payload has no \{issue\.number\}\), so this event runs alone\./,
  );
});

Deno.test("loadConfig() takes a session on a static route, refuses a bad one, and reads session_ttl", async () => {
  const config = (fields: string, extra = "") =>
    enabledConfig(8644, `${extra}      routes:\n        ci: {prompt: "x", ${fields}}\n`);
  await using h = await tempHome({
    config: config(`session: "{issue.number}", session_budget: 900`, "      session_ttl: 3600\n"),
  });
  const loaded = await loadConfig({ AGENT_HOME: h.home });
  const ci = loaded.webhook.routes.get("ci");
  assert.deepEqual([ci?.session, ci?.session_budget], ["{issue.number}", 900]);
  assert.equal(loaded.webhook.sessionTtlSeconds, 3600);

  await Deno.writeTextFile(join(h.home, "config.yaml"), config(`session: "{issue.number}"`));
  assert.equal((await loadConfig({ AGENT_HOME: h.home })).webhook.sessionTtlSeconds, 604_800);
  for (
    const [fields, extra, message] of [
      ["session_budget: 10", "", /routes\.ci in .*config\.yaml: session_budget needs session/],
      ['session: ""', "", /session must be a template/],
      ['session: "k", session_budget: -1', "", /session_budget must be a whole number of tokens/],
      ['session: "k"', "      session_ttl: 0\n", /session_ttl/],
    ] as const
  ) {
    await Deno.writeTextFile(join(h.home, "config.yaml"), config(fields, extra));
    await assert.rejects(() => loadConfig({ AGENT_HOME: h.home }), message, fields);
  }
});
