/**
 * End to end, in process: coalesced bursts (docs/subscriptions.md#coalescing) through the real
 * gateway (`startGateway` on port 0, its clock injected), a loopback OpenAI-compatible endpoint
 * and the Telegram fake, with GitHub payloads signed by `@octokit/webhooks-methods`. Events of
 * one key within the window make one agent run whose prompt lists them all, and one message;
 * the window slides with each event up to its maximum; other keys run apart. The kill -9 cases
 * are in `coalesce_crash_test.ts`.
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
import { startFakeLlm } from "../fakes/llm_server.ts";
import { enabledConfig, eventually, signedGitHub, tempHome } from "../_helpers.ts";

const SECRET = "coalesce-secret-0123";
const SECOND = 1000;
const ISSUE = githubExample("issues", "opened");
const COMMENT = githubExample("issue_comment", "created");

/** `gh`: each issue's events within 10 s of each other fold into one run, for 30 s at most. */
const COALESCING: Subscription = {
  secret: SECRET,
  prompt: "{__event__} on #{issue.number}: {issue.title}",
  deliver: "telegram",
  deliver_extra: { chat_id: "4242" },
  coalesce: 10,
  coalesce_key: "{repository.full_name}#{issue.number}",
  coalesce_max: 30,
};

/** The gateway with `gh`, its clock at `clock.ms`, the fakes, and helpers to post and wait. */
async function startWorld(subscription: Subscription = COALESCING) {
  const home = await tempHome({ config: enabledConfig(0) });
  await Deno.writeTextFile(
    join(home.home, "webhook_subscriptions.json"),
    JSON.stringify({ gh: subscription }),
  );
  const telegram = startFakeTelegram();
  const llm = await startFakeLlm({ answer: () => "Noted." });
  const env = { AGENT_HOME: home.home, HOME: "/nonexistent", ...telegram.env, ...llm.env };
  const clock = { ms: Date.now() };
  const start = clock.ms;
  const gateway = await startGateway(await loadConfig(env), { now: () => clock.ms });
  return {
    gateway,
    telegram,
    llm,
    /** Sets the gateway's clock to `seconds` after the start. */
    at(seconds: number) {
      clock.ms = start + seconds * SECOND;
    },
    /** The queue's next due time, in seconds after the start. */
    dueAt: async () => ((await gateway.store.nextDueAtMs() ?? NaN) - start) / SECOND,
    /** Posts `payload` as the GitHub event `event`, at `seconds`; returns its event id. */
    async post(seconds: number, payload: Record<string, unknown>, event = "issues") {
      clock.ms = start + seconds * SECOND;
      const response = await fetch(
        `${gateway.url}/webhooks/gh`,
        await signedGitHub(SECRET, payload, { event }),
      );
      assert.equal(response.status, 202);
      return String((await response.json()).event_id);
    },
    async [Symbol.asyncDispose]() {
      await gateway.stop();
      await llm.close();
      await telegram.close();
      await home[Symbol.asyncDispose]();
    },
  };
}

/** The `issues.opened` example about issue `number`, titled `title`. */
function issue(number: number, title: string): Record<string, unknown> {
  return { ...ISSUE, issue: { ...(ISSUE.issue as object), number, title } };
}

/** The `issue_comment.created` example on issue `number`. */
function comment(number: number): Record<string, unknown> {
  return { ...COMMENT, issue: { ...(COMMENT.issue as object), number, title: "Crash" } };
}

Deno.test("three events of one issue within the window make one agent run listing all three, and one message", async () => {
  await using w = await startWorld();
  const first = await w.post(0, issue(7, "Crash"));
  assert.equal(await w.dueAt(), 10);
  const second = await w.post(4, comment(7), "issue_comment");
  assert.equal(await w.dueAt(), 14, "the window slides with the second event");
  const third = await w.post(9, comment(7), "issue_comment");
  assert.equal(await w.dueAt(), 19, "and with the third");
  assert.equal(w.llm.requests.length, 0);

  w.at(19);
  await eventually(async () => (await w.gateway.store.getEvent(third))?.status === "delivered", {
    what: "the folded events delivered",
  });
  assert.equal(w.llm.requests.length, 1, "one agent run");
  const prompt = w.llm.requests[0].messages.at(-1)!.content;
  const lines = prompt.split("\n").filter((line) =>
    line.startsWith("## ") || line.includes(" on #")
  );
  assert.match(
    prompt,
    /^3 events arrived together \(coalescing key ".+#7"\); answer them as one\./,
  );
  assert.deepEqual(lines.map((line) => line.replace(/ at \S+Z$/, " at <time>")), [
    "## Event 1 of 3: issues.opened at <time>",
    "issues.opened on #7: Crash",
    "## Event 2 of 3: issue_comment.created at <time>",
    "issue_comment.created on #7: Crash",
    "## Event 3 of 3: issue_comment.created at <time>",
    "issue_comment.created on #7: Crash",
  ]);
  assert.deepEqual(w.telegram.messages.map((message) => message.text), ["Noted."]);
  for (const id of [first, second, third]) {
    assert.equal((await w.gateway.store.getEvent(id))?.status, "delivered");
  }
  assert.deepEqual(
    (await Promise.all([second, third].map((id) => w.gateway.store.getEvent(id))))
      .map((event) => event?.coalescedInto),
    [first, first],
    "each folded event names the event whose run answered it",
  );
});

Deno.test("a window open past coalesce_max runs at the cap; a later event starts a window of its own", async () => {
  await using w = await startWorld();
  // Every 8 s, each within the 10 s window of the one before.
  for (const seconds of [0, 8, 16, 24]) await w.post(seconds, comment(3), "issue_comment");
  assert.equal(await w.dueAt(), 30, "capped at the first event + 30 s, not 34");

  w.at(30);
  await eventually(() => w.telegram.messages.length === 1, { what: "the capped run delivered" });
  assert.match(w.llm.requests[0].messages.at(-1)!.content, /^4 events arrived together/);
  await w.post(32, comment(3), "issue_comment");
  assert.equal(await w.dueAt(), 42);
  w.at(42);
  await eventually(() => w.telegram.messages.length === 2, { what: "the next window delivered" });
  assert.equal(
    w.llm.requests[1].messages.at(-1)!.content,
    "issue_comment.created on #3: Crash",
    "an event alone in its window gets its own prompt",
  );
});

Deno.test("events of different keys in the same window run apart", async () => {
  await using w = await startWorld();
  await w.post(0, issue(1, "One"));
  await w.post(1, issue(2, "Two"));
  await w.post(2, comment(1), "issue_comment");
  w.at(12);
  await eventually(() => w.telegram.messages.length === 2, { what: "two runs delivered" });
  const prompts = w.llm.requests.map((request) => request.messages.at(-1)!.content).sort();
  assert.equal(prompts.length, 2);
  assert.match(prompts[0], /^2 events arrived together \(coalescing key ".+#1"\)/);
  assert.equal(prompts[1], "issues.opened on #2: Two");
});

Deno.test("events whose payload lacks a field of the key run alone, at once", async () => {
  await using w = await startWorld();
  const numberless = (title: string) => {
    const { number: _n, ...rest } = ISSUE.issue as Record<string, unknown>;
    return { ...ISSUE, issue: { ...rest, title } };
  };
  const first = await w.post(0, numberless("One"));
  const second = await w.post(1, numberless("Two"));
  await eventually(() => w.telegram.messages.length === 2, {
    what: "each delivered with no window to wait out",
  });
  assert.equal(w.llm.requests.length, 2, "not folded under one key with {issue.number} left in");
  for (const id of [first, second]) {
    assert.equal((await w.gateway.store.getEvent(id))?.coalescedInto, undefined);
  }
});

Deno.test("a subscription without coalescing runs each event at once", async () => {
  const { coalesce: _c, coalesce_key: _k, coalesce_max: _m, ...plain } = COALESCING;
  await using w = await startWorld(plain);
  await w.post(0, issue(1, "One"));
  await w.post(0, comment(1), "issue_comment");
  await eventually(() => w.telegram.messages.length === 2, { what: "two runs delivered" });
  assert.equal(w.llm.requests.length, 2);
});
