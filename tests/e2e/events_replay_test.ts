/**
 * End to end: `agent webhook events` and `agent webhook replay` as subprocesses against the
 * state database of a running `main.ts gateway run`, with a fake Telegram and a fake
 * OpenAI-compatible endpoint that fails until the test lets it recover.
 */
import assert from "node:assert/strict";
import { startFakeTelegram } from "../fakes/chat_servers.ts";
import { githubExample } from "../fakes/github_examples.ts";
import { type FakeLlmRequest, startFakeLlm } from "../fakes/llm_server.ts";
import {
  enabledConfig,
  eventually,
  runCli,
  signedGitHub,
  startGatewayProcess,
  tempHome,
} from "../_helpers.ts";
import { webhookEvents } from "./_cli.ts";

const SECRET = "events-secret-0123456";
/** Each failure is final: the event is `failed` after one attempt. */
const CONFIG = `${enabledConfig(0)}agent:\n  retry: {max_attempts: 1, initial_delay_seconds: 0}\n`;

/** One row of `agent webhook events --json`. */
interface EventRow {
  id: string;
  subscription: string;
  event: string;
  delivery_id: string;
  status: string;
  attempts: number;
  target: string;
  last_error: string | null;
  attempts_detail: { series: number; attempt: number; error: string | null }[];
}

/** A running gateway whose LLM answers 500 while `broken` is true, with two subscriptions. */
async function brokenLlmGateway() {
  const h = await tempHome({ config: CONFIG });
  const telegram = startFakeTelegram();
  const state = { broken: true };
  const llm = await startFakeLlm({
    answer: (request: FakeLlmRequest) =>
      state.broken
        ? { status: 500, message: "upstream model down" }
        : `answer to ${request.messages.at(-1)?.content}`,
  });
  const env = {
    AGENT_HOME: h.home,
    ...telegram.env,
    ...llm.env,
  };
  const dispose = async () => {
    await llm.close();
    await telegram.close();
    await h[Symbol.asyncDispose]();
  };
  try {
    for (const [name, target] of [["alpha", ["--deliver", "telegram"]], ["beta", []]] as const) {
      const args = ["--events", "issues,push", "--prompt", `${name}: {__delivery_id__}`];
      const chat = target.length ? ["--deliver-chat-id", "99"] : [];
      const sub = await runCli(
        ["webhook", "subscribe", name, ...args, ...target, ...chat, "--secret", SECRET],
        env,
      );
      assert.equal(sub.code, 0, sub.stderr);
    }
    const gateway = await startGatewayProcess(env);
    return {
      env,
      state,
      telegram,
      llm,
      gateway,
      async [Symbol.asyncDispose]() {
        await gateway.stop();
        await dispose();
      },
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}

async function post(url: string, name: string, event: string, delivery: string) {
  const payload = githubExample(event, event === "issues" ? "opened" : undefined);
  const response = await fetch(
    `${url}/webhooks/${name}`,
    await signedGitHub(SECRET, payload, { event, delivery }),
  );
  assert.equal(response.status, 202);
  await response.body?.cancel();
}

async function eventsJson(env: Record<string, string>, args: string[] = []): Promise<EventRow[]> {
  return await webhookEvents<EventRow>(env, args);
}

/** The shortest prefix of `id` that no other id starts with. */
function uniquePrefix(id: string, all: string[]): string {
  for (let length = "evt_".length + 1; length < id.length; length++) {
    const prefix = id.slice(0, length);
    if (all.filter((other) => other.startsWith(prefix)).length === 1) return prefix;
  }
  return id;
}

/** Posts alpha/issues, alpha/push, beta/issues in that order and waits until all three failed. */
async function threeFailedEvents(g: Awaited<ReturnType<typeof brokenLlmGateway>>) {
  await post(g.gateway.url, "alpha", "issues", "a-1");
  await post(g.gateway.url, "alpha", "push", "a-2");
  await post(g.gateway.url, "beta", "issues", "b-1");
  return await eventually(async () => {
    const rows = await eventsJson(g.env);
    return rows.length === 3 && rows.every((row) => row.status === "failed") ? rows : undefined;
  }, { what: "three failed events" });
}

Deno.test("webhook events lists a running gateway's events as a table and as JSON, filtered", async () => {
  await using g = await brokenLlmGateway();
  const rows = await threeFailedEvents(g);
  assert.deepEqual(rows.map((row) => row.delivery_id), ["b-1", "a-2", "a-1"], "newest first");
  for (const row of rows) {
    assert.match(row.id, /^evt_[0-9a-z]{16}$/);
    assert.equal(row.attempts, 1);
    assert.match(row.last_error ?? "", /500 upstream model down/);
    assert.deepEqual(row.attempts_detail.map((a) => a.attempt), [1]);
    assert.ok(!("payload" in row) && !("prompt" in row), "payloads stay out of the listing");
  }
  assert.deepEqual(rows.map((row) => [row.subscription, row.event, row.target]), [
    ["beta", "issues.opened", "log"],
    ["alpha", "push", "telegram"],
    ["alpha", "issues.opened", "telegram"],
  ]);

  const table = await runCli(["webhook", "events"], g.env);
  assert.equal(table.code, 0, table.stderr);
  const lines = table.stdout.trimEnd().split("\n");
  assert.match(lines[0], /^ID\s+SUBSCRIPTION\s+EVENT\s+DELIVERY ID\s+STATUS\s+TRIES\s+RECEIVED/);
  assert.equal(lines.length, 4);
  for (const [i, row] of rows.entries()) {
    assert.ok(lines[i + 1].startsWith(row.id), lines[i + 1]);
    assert.match(
      lines[i + 1],
      new RegExp(`${row.subscription}\\s.*${row.delivery_id}\\s+failed\\s+1\\s`),
    );
    assert.match(lines[i + 1], /upstream model down/);
  }

  const alpha = await eventsJson(g.env, ["alpha"]);
  assert.deepEqual(alpha.map((row) => row.delivery_id), ["a-2", "a-1"]);
  const limited = await eventsJson(g.env, ["--limit", "1"]);
  assert.deepEqual(limited.map((row) => row.delivery_id), ["b-1"]);
  assert.deepEqual(await eventsJson(g.env, ["--status", "delivered"]), []);
  const failedBeta = await eventsJson(g.env, ["beta", "--status", "failed", "--limit", "5"]);
  assert.deepEqual(failedBeta.map((row) => row.delivery_id), ["b-1"]);
  const none = await runCli(["webhook", "events", "--status", "queued"], g.env);
  assert.equal(none.code, 0);
  assert.match(none.stdout, /No events/);

  for (const args of [["--status", "done"], ["--limit", "0"], ["alpha", "beta"], ["--bogus"]]) {
    const usage = await runCli(["webhook", "events", ...args], g.env);
    assert.equal(usage.code, 2, `events ${args.join(" ")}: ${usage.stderr}`);
    assert.match(usage.stderr, /^Error: /);
  }
});

Deno.test("webhook replay by a unique id prefix delivers a failed event once the LLM recovers", async () => {
  await using g = await brokenLlmGateway();
  const rows = await threeFailedEvents(g);
  const target = rows.find((row) => row.delivery_id === "a-1")!;
  g.state.broken = false;

  const prefix = uniquePrefix(target.id, rows.map((row) => row.id));
  const replay = await runCli(["webhook", "replay", prefix], g.env);
  assert.equal(replay.code, 0, replay.stderr);
  assert.match(replay.stdout, new RegExp(`Queued ${target.id} \\(alpha, issues.opened\\) again`));
  assert.match(replay.stdout, /The running gateway picks it up within a second/);

  const replayed = await eventually(async () => {
    const [row] = (await eventsJson(g.env, ["alpha"])).filter((r) => r.id === target.id);
    return row.status === "delivered" ? row : undefined;
  }, { what: "the replayed event delivered" });
  assert.equal(replayed.attempts, 1, "a replay starts a new series of attempts");
  assert.deepEqual(
    replayed.attempts_detail.map((a) => [a.series, a.attempt, a.error === null]),
    [[1, 1, false], [2, 1, true]],
    "the replay's attempt is the first of series 2",
  );
  assert.deepEqual(g.telegram.messages.map((m) => [m.to, m.text]), [[
    "99",
    "answer to alpha: a-1",
  ]]);
  const others = (await eventsJson(g.env)).filter((row) => row.id !== target.id);
  assert.deepEqual(others.map((row) => row.status), ["failed", "failed"], "only the replayed one");
});

Deno.test("webhook replay explains an unknown id, an ambiguous prefix and a missing argument", async () => {
  await using g = await brokenLlmGateway();
  await threeFailedEvents(g);

  const unknown = await runCli(["webhook", "replay", "evt_doesnotexist"], g.env);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /No event "evt_doesnotexist"/);
  const ambiguous = await runCli(["webhook", "replay", "evt_"], g.env);
  assert.equal(ambiguous.code, 1);
  assert.match(ambiguous.stderr, /prefix "evt_" is ambiguous/);
  const missing = await runCli(["webhook", "replay"], g.env);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /Expected one <event-id>/);
  const extra = await runCli(["webhook", "replay", "evt_a", "evt_b"], g.env);
  assert.equal(extra.code, 2);

  const after = await eventsJson(g.env);
  assert.ok(after.every((row) => row.status === "failed"), "nothing was requeued");
});
