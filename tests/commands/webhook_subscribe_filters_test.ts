import assert from "node:assert/strict";
import { join } from "node:path";
import { runCommand } from "../../commands/mod.ts";
import { ConfigError, UsageError } from "../../lib/errors.ts";
import { loadConfig } from "../../lib/config/mod.ts";
import { readSubscriptions } from "../../lib/subscriptions/file_store.ts";
import { enabledConfig, fakeContext, tempHome } from "../_helpers.ts";

const BASE_IS_MAIN = 'pull_request.base.ref == "main"';
const BUG_LABEL = 'pull_request.labels.exists(l, l.name == "bug")';

Deno.test("subscribe --filter stores each filter in order, shows them, and --filter true removes them", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const env = { AGENT_HOME: h.home };
  const ctx = fakeContext(env);
  const argv = ["webhook", "subscribe", "prs", "--filter", BASE_IS_MAIN, "--filter", BUG_LABEL];
  assert.equal(await runCommand(argv, ctx), 0);
  assert.match(ctx.output(), /Filter: +pull_request\.base\.ref == "main"\n +Filter: +pull_request/);
  const path = join(h.home, "webhook_subscriptions.json");
  assert.deepEqual((await readSubscriptions(path)).prs.filters, [BASE_IS_MAIN, BUG_LABEL]);

  // An update without --filter keeps them; list shows them.
  await runCommand(["webhook", "subscribe", "prs", "--events", "pull_request"], fakeContext(env));
  const list = fakeContext(env);
  await runCommand(["webhook", "list"], list);
  assert.match(
    list.output(),
    /Events: +pull_request\n +Filter: +pull_request\.base\.ref == "main"\n/,
  );

  await runCommand(["webhook", "subscribe", "prs", "--filter", "true"], fakeContext(env));
  assert.deepEqual((await readSubscriptions(path)).prs.filters, []);
});

Deno.test("subscribe --filter with a syntax error says where and what was expected, and stores nothing", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const ctx = fakeContext({ AGENT_HOME: h.home });
  await assert.rejects(
    runCommand(
      ["webhook", "subscribe", "prs", "--filter", BASE_IS_MAIN, "--filter", 'action = "opened"'],
      ctx,
    ),
    (error: Error) =>
      error instanceof UsageError && error.exitCode === 2 &&
      error.message.startsWith(
        '--filter 2 has a mistake at column 8: Unexpected character: =\n  action = "opened"\n' +
          "         ^",
      ),
  );
  await assert.rejects(
    runCommand(["webhook", "subscribe", "prs", "--filter", "labels.exists(l l.name)"], ctx),
    /column 17: Expected RPAREN, got IDENTIFIER/,
  );
  await assert.rejects(
    runCommand(["webhook", "subscribe", "prs", "--filter", ""], ctx),
    /--filter is empty/,
  );
  assert.deepEqual(await readSubscriptions(join(h.home, "webhook_subscriptions.json")), {});
});

Deno.test("a config.yaml route takes filters: the same way, and one that does not compile is named", async () => {
  const route = (filter: string) =>
    enabledConfig(
      8644,
      `      routes:\n        ci:\n          filters:\n            - '${filter}'\n`,
    );
  await using good = await tempHome({ config: route(BASE_IS_MAIN) });
  const config = await loadConfig({ AGENT_HOME: good.home });
  assert.deepEqual(config.webhook.routes.get("ci")?.filters, [BASE_IS_MAIN]);

  await using bad = await tempHome({ config: route("amount >> 1000") });
  await assert.rejects(
    loadConfig({ AGENT_HOME: bad.home }),
    (error: Error) =>
      error instanceof ConfigError &&
      /routes\.ci\.filters in .*: filter 1, column 9: /.test(error.message),
  );
});

Deno.test("subscribe --auth none is refused unless the gateway listens on a loopback address", async () => {
  await using h = await tempHome({ config: enabledConfig().replace("127.0.0.1", "0.0.0.0") });
  const env = { AGENT_HOME: h.home };
  await assert.rejects(
    runCommand(["webhook", "subscribe", "local", "--auth", "none"], fakeContext(env)),
    (error: Error) =>
      error instanceof UsageError &&
      /--auth none is accepted only while the gateway listens on a loopback address/.test(
        error.message,
      ) && /it listens on 0\.0\.0\.0/.test(error.message),
  );
  assert.deepEqual(await readSubscriptions(join(h.home, "webhook_subscriptions.json")), {});

  // On loopback it is taken, with no secret asked for; list says so, and warns once the
  // gateway is set to listen elsewhere.
  const local = { AGENT_HOME: h.home, WEBHOOK_HOST: "127.0.0.1" };
  const ctx = fakeContext(local);
  assert.equal(await runCommand(["webhook", "subscribe", "local", "--auth", "none"], ctx), 0);
  assert.match(ctx.output(), /Secret: +none asked for \(--auth none/);
  const record = (await readSubscriptions(join(h.home, "webhook_subscriptions.json"))).local;
  assert.equal(record.auth, "none");
  assert.equal(record.secret, undefined);
  const list = fakeContext(env);
  await runCommand(["webhook", "list"], list);
  assert.match(list.output(), /Auth: +none \(unsigned requests, on loopback only\)/);
  assert.match(
    list.err.join("\n"),
    /"local" has auth none.*listen on 0\.0\.0\.0.*refused \(404\)/s,
  );
  assert.doesNotMatch(list.err.join("\n"), /no secret/);
});

Deno.test("a hand-edited filter that does not compile: list names it, the others are served", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  await Deno.writeTextFile(
    join(h.home, "webhook_subscriptions.json"),
    JSON.stringify({
      typo: { secret: "typo-secret-1", filters: ['action == "opened"', "labels.exists(l l)"] },
      fine: { secret: "fine-secret-1", filters: [BASE_IS_MAIN] },
    }),
  );
  const ctx = fakeContext({ AGENT_HOME: h.home });
  assert.equal(await runCommand(["webhook", "list"], ctx), 0);
  assert.match(
    ctx.err.join("\n"),
    /subscription "typo" in .*: filters: filter 2, column 17: Expected RPAREN.*; the gateway refuses its requests/s,
  );
  assert.doesNotMatch(ctx.err.join("\n"), /"fine"/);
});
