/**
 * `agent webhook subscribe --coalesce` (docs/subscriptions.md#coalescing): what it stores, what
 * it refuses at subscribe, what `webhook list` shows, and `config.yaml`'s routes checked alike.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runCommand } from "../../commands/mod.ts";
import { loadConfig } from "../../lib/config/mod.ts";
import { UsageError } from "../../lib/errors.ts";
import { readSubscriptions } from "../../lib/subscriptions/file_store.ts";
import { coalesceNotes } from "../../lib/subscriptions/coalesce_options.ts";
import { enabledConfig, fakeContext, tempHome } from "../_helpers.ts";
import { storedGh, subscribeGh } from "./_subscribe_gh.ts";

const KEY = "{repository.full_name}#{issue.number}";

Deno.test("subscribe --coalesce stores the window, the key and the maximum, and list shows them", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const ctx = await subscribeGh(h.home, ["--coalesce", "30", "--coalesce-key", KEY]);
  assert.match(ctx.out.join("\n"), /Coalesce: 30 s window \(at most 300 s\), key \{repository/);
  const { coalesce, coalesce_key, coalesce_max } = await storedGh(h.home);
  assert.deepEqual({ coalesce, coalesce_key, coalesce_max }, {
    coalesce: 30,
    coalesce_key: KEY,
    coalesce_max: undefined,
  });
  await subscribeGh(h.home, ["--coalesce-max", "120", "--coalesce", "2.5"]);
  assert.equal((await storedGh(h.home)).coalesce_max, 120, "the other flags keep the key");
  const list = fakeContext({ AGENT_HOME: h.home });
  await runCommand(["webhook", "list"], list);
  assert.match(list.out.join("\n"), /Coalesce: 2\.5 s window \(at most 120 s\), key \{repository/);

  await subscribeGh(h.home, ["--coalesce", "none"]);
  const stopped = await storedGh(h.home);
  assert.deepEqual(
    [stopped.coalesce, stopped.coalesce_key, stopped.coalesce_max],
    [undefined, undefined, undefined],
  );
});

Deno.test("subscribe refuses --coalesce without a key, past its maximum, or in direct mode", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const refused: [string[], RegExp][] = [
    [
      ["--coalesce", "30"],
      /"gh": --coalesce needs a key: give --coalesce-key '<template>'.*--session/,
    ],
    [
      ["--coalesce", "400", "--coalesce-key", KEY],
      /--coalesce must be at most --coalesce-max \(300 s\)/,
    ],
    [
      ["--coalesce", "30", "--coalesce-key", KEY, "--coalesce-max", "10"],
      /--coalesce must be at most --coalesce-max \(10 s\)/,
    ],
    [
      ["--coalesce", "30", "--coalesce-key", KEY, "--deliver-only", "--deliver", "slack:C1"],
      /--coalesce folds events into one agent run, and a direct-delivery subscription has none/,
    ],
    [["--coalesce-key", KEY], /--coalesce-key needs --coalesce <seconds>/],
    [["--coalesce", "0", "--coalesce-key", KEY], /--coalesce must be a number of seconds > 0/],
    [["--coalesce", "soon", "--coalesce-key", KEY], /got "soon"/],
    [["--coalesce", "30", "--coalesce-key", " "], /--coalesce-key is empty/],
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

Deno.test("loadConfig() takes coalescing on a static route and refuses one without a key", async () => {
  const route = (fields: string) =>
    enabledConfig(8644, `      routes:\n        ci: {prompt: "x", ${fields}}\n`);
  await using h = await tempHome({
    config: route(`coalesce: 20, coalesce_key: "{issue.number}", coalesce_max: 60`),
  });
  const config = await loadConfig({ AGENT_HOME: h.home });
  const ci = config.webhook.routes.get("ci");
  assert.deepEqual([ci?.coalesce, ci?.coalesce_key, ci?.coalesce_max], [20, "{issue.number}", 60]);

  for (
    const [fields, message] of [
      ["coalesce: 20", /routes\.ci in .*config\.yaml: coalesce needs a key: coalesce_key/],
      ['coalesce: "20", coalesce_key: "k"', /coalesce must be a number of seconds > 0/],
      ['coalesce_key: "k"', /coalesce_key needs coalesce/],
    ] as const
  ) {
    await Deno.writeTextFile(join(h.home, "config.yaml"), route(fields));
    await assert.rejects(() => loadConfig({ AGENT_HOME: h.home }), message, fields);
  }
});

Deno.test("coalesceNotes() says an event whose payload lacks a field of the key runs alone", () => {
  const route = { name: "gh", origin: "dynamic" as const, coalesce: 30, coalesce_key: KEY };
  const payload = { repository: { full_name: "octo/repo" }, issue: { title: "No number" } };
  assert.deepEqual(coalesceNotes(route, { payload, event: "issues" }), [
    `Coalescing: the payload has no {issue.number} for the key ${KEY}, so the event runs alone.`,
  ]);
  const numbered = { ...payload, issue: { number: 12 } };
  assert.match(
    coalesceNotes(route, { payload: numbered, event: "issues" })[0],
    /key is "octo\/repo#12"/,
  );
});
