/**
 * `agent state migrate --to postgres` (a throwaway server, tests/fakes/postgres.ts): the
 * subscription file and the SQLite events, with their attempts and message parts, arrive in the
 * database once; a second run copies nothing; the SQLite file keeps its events; and a gateway
 * running with the home stops it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runCommand } from "../../commands/mod.ts";
import { ConflictError } from "../../lib/errors.ts";
import { lockGatewayState } from "../../lib/state/gateway_lock.ts";
import { openPostgresStore } from "../../lib/state/postgres/mod.ts";
import { openStateStore } from "../../lib/state/sqlite/mod.ts";
import { updateSubscriptions } from "../../lib/subscriptions/file_store.ts";
import { openPostgresSubscriptions } from "../../lib/subscriptions/postgres_source.ts";
import { startPostgres, type ThrowawayPostgres } from "../fakes/postgres.ts";
import { newEvent } from "../lib/state/_fixtures.ts";
import { enabledConfig, fakeContext, tempHome } from "../_helpers.ts";

const NOW = 1_700_000_100_000;
let server: Promise<ThrowawayPostgres> | undefined;

/** A home on SQLite whose config.yaml names a fresh schema, with a subscription and 2 events. */
async function homeWithEvents(url: string) {
  const h = await tempHome({ config: `${enabledConfig()}state:\n  url: ${url}\n` });
  await updateSubscriptions(
    join(h.home, "webhook_subscriptions.json"),
    (records) => void (records.gh = { secret: "s-1", events: ["issues"] }),
  );
  const store = openStateStore(join(h.home, "state", "gateway.db"), {
    backgroundCheckpoints: false,
  });
  const delivered = (await store.accept(newEvent())).eventId!;
  const queued = (await store.accept(newEvent({ receivedAtMs: NOW }))).eventId!;
  await store.claimDue(NOW, 1);
  await store.saveResponse(delivered, "Labelled: bug");
  await store.savePartsSent(delivered, 1, {
    sentBefore: 0,
    parts: 1,
    receipts: [{
      part: 1,
      parts: 1,
      target: "telegram",
      chat: "42",
      messageId: "7",
      url: null,
      sentAtMs: NOW,
    }],
  });
  await store.markDelivered(delivered, NOW);
  await store.close();
  return { h, delivered, queued };
}

Deno.test("state migrate copies subscriptions and events once, and leaves SQLite as it was", async () => {
  server ??= startPostgres();
  const schema = await (await server).createSchema();
  const { h, delivered, queued } = await homeWithEvents(schema.url);
  await using _home = h;
  try {
    const first = fakeContext({ AGENT_HOME: h.home });
    assert.equal(await runCommand(["state", "migrate", "--to", "postgres"], first), 0);
    assert.match(first.output(), /subscriptions: 1 copied; 0 already there/);
    assert.match(
      first.output(),
      /events: +2 copied, with 1 attempts, 1 message parts and 0 conversation turns; 0 already/,
    );
    assert.match(first.output(), /Next: set state\.backend: postgres/);

    const second = fakeContext({ AGENT_HOME: h.home });
    assert.equal(await runCommand(["state", "migrate", "--to", "postgres"], second), 0);
    assert.match(second.output(), /subscriptions: 0 copied; 1 already there/);
    assert.match(second.output(), /events: +0 copied, with 0 attempts, .*; 2 already there/);

    const store = await openPostgresStore(schema.url, { poolSize: 1 });
    try {
      assert.equal((await store.getEvent(delivered))?.status, "delivered");
      assert.equal((await store.getEvent(queued))?.status, "queued");
      assert.equal((await store.attempts(delivered)).length, 1);
      assert.equal((await store.lineage(delivered))?.parts?.[0]?.messageId, "7");
      assert.equal((await store.listEvents({ limit: 10 })).length, 2, "none copied twice");
    } finally {
      await store.close();
    }
    const subscriptions = await openPostgresSubscriptions(schema.url);
    try {
      assert.deepEqual(await subscriptions.read(), { gh: { secret: "s-1", events: ["issues"] } });
    } finally {
      await subscriptions.close();
    }
    const sqlite = openStateStore(join(h.home, "state", "gateway.db"), {
      backgroundCheckpoints: false,
    });
    assert.equal((await sqlite.listEvents({ limit: 10 })).length, 2, "SQLite keeps its events");
    await sqlite.close();
  } finally {
    await schema.drop();
  }
});

Deno.test("state migrate refuses while a gateway runs with the home, copying nothing", async () => {
  server ??= startPostgres();
  const schema = await (await server).createSchema();
  const { h } = await homeWithEvents(schema.url);
  await using _home = h;
  const lock = await lockGatewayState(join(h.home, "state", "gateway.db"));
  try {
    await assert.rejects(
      runCommand(["state", "migrate", "--to", "postgres"], fakeContext({ AGENT_HOME: h.home })),
      (error: Error) => error instanceof ConflictError && /stop it first/.test(error.message),
    );
    const subscriptions = await openPostgresSubscriptions(schema.url);
    try {
      assert.deepEqual(await subscriptions.read(), {});
    } finally {
      await subscriptions.close();
    }
  } finally {
    lock.close();
    await schema.drop();
  }
});

Deno.test("state migrate asks for the database when neither DATABASE_URL nor state.url names it", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  await assert.rejects(
    runCommand(["state", "migrate", "--to", "postgres"], fakeContext({ AGENT_HOME: h.home })),
    /DATABASE_URL .*state\.url/,
  );
});

Deno.test("state migrate: the throwaway server stops", async () => {
  await (await server)?.stop();
});
