/**
 * End to end, in process: conversations (docs/subscriptions.md#conversations) through the real
 * gateway (`startGateway` on port 0, its clock injected), a loopback OpenAI-compatible endpoint
 * and the Telegram fake, with GitHub payloads signed by `@octokit/webhooks-methods`. A later
 * event of an issue gets the earlier turns of that issue as chat messages, within the budget;
 * another issue gets none; the runs of one issue go one at a time, in order; turns are
 * forgotten after `session_ttl`; a `command` agent reads them from `AGENT_SESSION_FILE`. The
 * kill -9 case is in `sessions_crash_test.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadConfig } from "../../lib/config/mod.ts";
import type { Subscription } from "../../lib/subscriptions/mod.ts";
import { startGateway } from "../../server/gateway.ts";
import { startFakeTelegram } from "../fakes/chat_servers.ts";
import { githubExample } from "../fakes/github_examples.ts";
import { type FakeLlmAnswer, type FakeLlmRequest, startFakeLlm } from "../fakes/llm_server.ts";
import { enabledConfig, eventually, signedGitHub, tempHome } from "../_helpers.ts";

const SECRET = "session-secret-0123";
const HOUR = 3_600_000;
const ISSUE = githubExample("issues", "opened");

/** `gh`: one conversation per issue, answered in Telegram chat 4242. */
const CONVERSING: Subscription = {
  secret: SECRET,
  prompt: "{issue.title}",
  deliver: "telegram",
  deliver_extra: { chat_id: "4242" },
  session: "{repository.full_name}#{issue.number}",
};

/** What the fake LLM answers: `answer to <the prompt>`. */
function answerTo(request: FakeLlmRequest): string {
  return `answer to ${request.messages.at(-1)!.content}`;
}

/** The messages of a request after the system prompt, as `role: content`. */
function chat(request: FakeLlmRequest): string[] {
  return request.messages.slice(1).map((message) => `${message.role}: ${message.content}`);
}

/**
 * The gateway with `gh`, its clock at `clock.ms`, the fakes, and helpers to post and wait.
 * @param options the subscription, `agent:` and `extra:` lines of config.yaml, and the LLM's
 *   answers
 */
async function startWorld(options: {
  subscription?: Subscription;
  agent?: string;
  extra?: string;
  answer?: (request: FakeLlmRequest, index: number) => FakeLlmAnswer | Promise<FakeLlmAnswer>;
} = {}) {
  const config = enabledConfig(0, options.extra ?? "") + (options.agent ?? "");
  const home = await tempHome({ config });
  await Deno.writeTextFile(
    join(home.home, "webhook_subscriptions.json"),
    JSON.stringify({ gh: options.subscription ?? CONVERSING }),
  );
  const telegram = startFakeTelegram();
  const llm = await startFakeLlm({ answer: options.answer ?? answerTo });
  const env = { AGENT_HOME: home.home, HOME: "/nonexistent", ...telegram.env, ...llm.env };
  const clock = { ms: Date.now() };
  const gateway = await startGateway(await loadConfig(env), { now: () => clock.ms });
  return {
    gateway,
    telegram,
    llm,
    clock,
    /** Posts an `issues.opened` about issue `number` titled `title`; returns its event id. */
    async post(number: number, title: string): Promise<string> {
      const payload = { ...ISSUE, issue: { ...(ISSUE.issue as object), number, title } };
      const response = await fetch(
        `${gateway.url}/webhooks/gh`,
        await signedGitHub(SECRET, payload),
      );
      assert.equal(response.status, 202);
      return String((await response.json()).event_id);
    },
    /** Waits until the event is delivered. */
    async delivered(id: string): Promise<void> {
      await eventually(async () => (await gateway.store.getEvent(id))?.status === "delivered", {
        what: `${id} delivered`,
      });
    },
    async [Symbol.asyncDispose]() {
      await gateway.stop();
      await llm.close();
      await telegram.close();
      await home[Symbol.asyncDispose]();
    },
  };
}

Deno.test("a later event of an issue gets the earlier turns as chat messages; another issue none", async () => {
  await using w = await startWorld();
  await w.delivered(await w.post(7, "first"));
  await w.delivered(await w.post(7, "second"));
  await w.delivered(await w.post(8, "elsewhere"));
  await w.delivered(await w.post(7, "third"));

  const [first, second, other, third] = w.llm.requests;
  assert.deepEqual(chat(first), ["user: first"]);
  assert.deepEqual(chat(second), ["user: first", "assistant: answer to first", "user: second"]);
  assert.deepEqual(chat(other), ["user: elsewhere"], "issue 8 is a conversation of its own");
  assert.deepEqual(chat(third), [
    "user: first",
    "assistant: answer to first",
    "user: second",
    "assistant: answer to second",
    "user: third",
  ]);
  assert.deepEqual(w.telegram.messages.map((m) => m.text), [
    "answer to first",
    "answer to second",
    "answer to elsewhere",
    "answer to third",
  ]);
});

Deno.test("the session budget drops the oldest turns first", async () => {
  // Each turn is about 20 tokens: a prompt of 40 characters and an answer of 50.
  const title = (n: number) => `turn ${n} `.padEnd(40, ".");
  await using w = await startWorld({ subscription: { ...CONVERSING, session_budget: 50 } });
  for (const n of [1, 2, 3]) await w.delivered(await w.post(7, title(n)));
  await w.delivered(await w.post(7, "fourth"));
  const fourth = chat(w.llm.requests[3]);
  assert.deepEqual(fourth, [
    `user: ${title(2)}`,
    `assistant: answer to ${title(2)}`,
    `user: ${title(3)}`,
    `assistant: answer to ${title(3)}`,
    "user: fourth",
  ]);
});

Deno.test("the runs of one issue go one at a time, in order; other issues do not wait", async () => {
  const release = Promise.withResolvers<void>();
  await using w = await startWorld({
    agent: "agent:\n  max_concurrency: 4\n",
    answer: async (request) => {
      if (request.messages.at(-1)!.content === "slow") await release.promise;
      return answerTo(request);
    },
  });
  const slow = await w.post(7, "slow");
  await eventually(() => w.llm.requests.length === 1, { what: "the slow run asked" });
  const waiting = await w.post(7, "waits");
  // Accepted after the waiting one, on another issue: it runs while the waiting one may not.
  await w.delivered(await w.post(8, "other issue"));
  assert.deepEqual(w.llm.requests.map((r) => r.messages.at(-1)!.content), ["slow", "other issue"]);
  assert.equal((await w.gateway.store.getEvent(waiting))?.status, "queued");

  release.resolve();
  await w.delivered(waiting);
  assert.equal((await w.gateway.store.getEvent(slow))?.status, "delivered");
  assert.deepEqual(chat(w.llm.requests[2]), [
    "user: slow",
    "assistant: answer to slow",
    "user: waits",
  ]);
});

Deno.test("turns older than session_ttl are forgotten, and the retention pass deletes them", async () => {
  await using w = await startWorld({ extra: "      session_ttl: 3600\n" });
  const first = await w.post(7, "first");
  await w.delivered(first);
  w.clock.ms += HOUR - 1000;
  await w.delivered(await w.post(7, "within the hour"));
  assert.deepEqual(chat(w.llm.requests[1]).slice(0, 1), ["user: first"]);

  w.clock.ms += 2000; // the first turn is over an hour old now; the second is not
  await w.delivered(await w.post(7, "later"));
  assert.deepEqual(chat(w.llm.requests[2]), [
    "user: within the hour",
    "assistant: answer to within the hour",
    "user: later",
  ]);
  await w.gateway.store.prune(w.clock.ms, { retentionDays: 3650 });
  const turns = await w.gateway.store.sessionTurns(
    "gh",
    "Codertocat/Hello-World#7",
    w.clock.ms - HOUR,
  );
  assert.deepEqual(turns.map((t) => t.prompt), ["within the hour", "later"], "the first is gone");
});

Deno.test("a command agent reads the earlier turns from the file AGENT_SESSION_FILE names", async () => {
  const script =
    "const s = JSON.parse(Deno.readTextFileSync(Deno.env.get('AGENT_SESSION_FILE'))); " +
    "console.log(`${s.key}: ${s.turns.map((t) => t.prompt + ' answered ' + t.answer).join(' | ')}`)";
  const deno = JSON.stringify(Deno.execPath());
  await using w = await startWorld({
    agent: `agent:\n  provider: command\n  command: [${deno}, "eval", ${JSON.stringify(script)}]\n`,
  });
  await w.delivered(await w.post(7, "first"));
  await w.delivered(await w.post(7, "second"));
  assert.deepEqual(w.telegram.messages.map((m) => m.text), [
    "Codertocat/Hello-World#7:",
    "Codertocat/Hello-World#7: first answered Codertocat/Hello-World#7:",
  ]);
});
