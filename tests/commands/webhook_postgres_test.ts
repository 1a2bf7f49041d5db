/**
 * The subscription commands with `state.backend: postgres` (a throwaway server,
 * tests/fakes/postgres.ts): they read and write the database's `subscriptions` table, never the
 * home's file, and a gateway of another home on the same database serves a new subscription
 * within a second.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runCommand } from "../../commands/mod.ts";
import { loadConfig } from "../../lib/config/mod.ts";
import { openPostgresSubscriptions } from "../../lib/subscriptions/postgres_source.ts";
import { startGateway } from "../../server/gateway.ts";
import { startPostgres, type ThrowawayPostgres } from "../fakes/postgres.ts";
import { enabledConfig, fakeContext, signedIssue, tempHome } from "../_helpers.ts";

let server: Promise<ThrowawayPostgres> | undefined;

/** A home whose config.yaml keeps state in a fresh schema of the file's server. */
async function postgresHome(url: string, port = 8644) {
  const home = await tempHome({
    config: `${enabledConfig(port)}state:\n  backend: postgres\n  url: ${url}\n`,
  });
  return home;
}

Deno.test("webhook subscribe, list and remove use the database with state.backend: postgres", async () => {
  server ??= startPostgres();
  const schema = await (await server).createSchema();
  try {
    await using h = await postgresHome(schema.url);
    const env = { AGENT_HOME: h.home };
    const subscribe = fakeContext(env);
    assert.equal(
      await runCommand(["webhook", "subscribe", "gh", "--events", "issues"], subscribe),
      0,
    );
    const secret = subscribe.output().match(/Secret:\s+(\S+)/)![1];
    await assert.rejects(
      Deno.stat(join(h.home, "webhook_subscriptions.json")),
      Deno.errors.NotFound,
    );

    const stored = await openPostgresSubscriptions(schema.url);
    try {
      assert.equal((await stored.read()).gh.secret, secret, "the record is in the table");
    } finally {
      await stored.close();
    }
    const list = fakeContext(env);
    assert.equal(await runCommand(["webhook", "list", "--json"], list), 0);
    const rows = JSON.parse(list.output()) as { name: string; events: string[] }[];
    assert.deepEqual(rows.map((row) => [row.name, row.events]), [["gh", ["issues"]]]);

    assert.equal(await runCommand(["webhook", "remove", "gh"], fakeContext(env)), 0);
    const after = fakeContext(env);
    await runCommand(["webhook", "list", "--json"], after);
    assert.deepEqual(JSON.parse(after.output()), []);
  } finally {
    await schema.drop();
  }
});

Deno.test("webhook list says which database it cannot reach, without its password", async () => {
  await using h = await postgresHome("postgres://agent:hunter2-secret@127.0.0.1:1/none");
  const ctx = fakeContext({ AGENT_HOME: h.home });
  await assert.rejects(
    runCommand(["webhook", "list"], ctx),
    (error: Error) =>
      /127\.0\.0\.1:1\/none/.test(error.message) && !error.message.includes("hunter2"),
  );
});

Deno.test("a subscription made through one home is served by another home's gateway within a second", async () => {
  server ??= startPostgres();
  const schema = await (await server).createSchema();
  try {
    await using gatewayHome = await postgresHome(schema.url, 0);
    await using commandHome = await postgresHome(schema.url);
    const config = await loadConfig({ AGENT_HOME: gatewayHome.home, HOME: "/nonexistent" });
    const gateway = await startGateway(config, {
      fetch: () => Promise.reject(new Error("no network in tests")),
    });
    try {
      const post = async (secret: string) => {
        const response = await fetch(`${gateway.url}/webhooks/gh`, await signedIssue(secret));
        await response.body?.cancel();
        return response.status;
      };
      assert.equal(await post("s"), 404);
      const ctx = fakeContext({ AGENT_HOME: commandHome.home });
      await runCommand(
        ["webhook", "subscribe", "gh", "--secret", "a-secret-of-the-right-size"],
        ctx,
      );
      const start = performance.now();
      let status = await post("a-secret-of-the-right-size");
      while (status !== 202 && performance.now() - start < 1000) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        status = await post("a-secret-of-the-right-size");
      }
      assert.equal(status, 202, `served after ${Math.round(performance.now() - start)} ms`);
    } finally {
      await gateway.stop({ deadlineMs: 0 });
    }
  } finally {
    await schema.drop();
  }
});

Deno.test("postgres commands: the throwaway server stops", async () => {
  await (await server)?.stop();
});
