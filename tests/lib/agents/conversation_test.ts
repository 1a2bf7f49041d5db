/**
 * Conversations in the agent runners (docs/subscriptions.md#conversations): the turns a budget
 * keeps, the chat messages `openai` sends, and the file a `command` agent reads through
 * `AGENT_SESSION_FILE`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createAgentRunner, estimateTokens, fitTurns } from "../../../lib/agents/mod.ts";
import { commandRunner } from "./_command_runner.ts";
import { withFakeLlm } from "./_fake_llm.ts";

const T0 = Date.UTC(2026, 0, 2, 3, 4, 5);

/** A turn of `chars` characters of prompt and as many of answer. */
function turn(n: number, chars = 40) {
  const text = String(n).padEnd(chars, ".");
  return { eventId: `evt_${n}`, prompt: text, answer: text, atMs: T0 + n };
}

Deno.test("estimateTokens() counts one token per 4 characters, rounded up", () => {
  assert.equal(estimateTokens(""), 0);
  assert.equal(estimateTokens("abcd"), 1);
  assert.equal(estimateTokens("abcde"), 2);
});

Deno.test("fitTurns() keeps the newest turns within the budget, dropping the oldest first", () => {
  const turns = [turn(1), turn(2), turn(3)]; // 20 tokens each: 10 of prompt, 10 of answer
  assert.deepEqual(fitTurns(turns, 60).map((t) => t.eventId), ["evt_1", "evt_2", "evt_3"]);
  assert.deepEqual(fitTurns(turns, 59).map((t) => t.eventId), ["evt_2", "evt_3"]);
  assert.deepEqual(fitTurns(turns, 20).map((t) => t.eventId), ["evt_3"]);
  assert.deepEqual(fitTurns(turns, 19), [], "a newest turn over the budget leaves none");
  // An older small turn is not kept past a newer one that did not fit: the turns stay in a row.
  const gap = [turn(1, 4), turn(2, 400), turn(3)];
  assert.deepEqual(fitTurns(gap, 40).map((t) => t.eventId), ["evt_3"]);
});

Deno.test("openai sends the earlier turns as user and assistant messages before the prompt", async () => {
  await withFakeLlm({ answer: () => "third answer" }, async (settings, fake) => {
    const run = createAgentRunner(settings, { fetch, env: {} });
    const answer = await run({
      prompt: "third",
      systemPrompt: "base",
      eventId: "evt_3",
      conversation: {
        key: "octo/repo#1",
        turns: [
          { eventId: "evt_1", prompt: "first", answer: "first answer", atMs: T0 },
          { eventId: "evt_2", prompt: "second", answer: "second answer", atMs: T0 + 1 },
        ],
      },
    });
    assert.equal(answer.text, "third answer");
    const messages = fake.requests[0].messages.map((m) => [m.role, m.content]);
    assert.equal(messages[0][0], "system");
    assert.deepEqual(messages.slice(1), [
      ["user", "first"],
      ["assistant", "first answer"],
      ["user", "second"],
      ["assistant", "second answer"],
      ["user", "third"],
    ]);
  });
});

Deno.test("openai sends only the system prompt and the prompt for an event of no conversation", async () => {
  await withFakeLlm({}, async (settings, fake) => {
    await createAgentRunner(settings, { fetch, env: {} })({ prompt: "alone", eventId: "e" });
    assert.deepEqual(fake.requests[0].messages.map((m) => m.role), ["system", "user"]);
  });
});

Deno.test("command reads the conversation from AGENT_SESSION_FILE, removed after the run", async () => {
  const script = "const path = Deno.env.get('AGENT_SESSION_FILE'); " +
    "console.log(JSON.stringify({ path, mode: Deno.statSync(path).mode & 0o777, " +
    "body: JSON.parse(Deno.readTextFileSync(path)) }))";
  const run = commandRunner([Deno.execPath(), "eval", script], {
    env: { DENO_DIR: Deno.env.get("DENO_DIR") ?? "/tmp/deno-dir-test" },
  });
  const answer = await run({
    prompt: "second",
    eventId: "evt_2",
    conversation: {
      key: "octo/repo#1",
      turns: [{ eventId: "evt_1", prompt: "first", answer: "first answer", atMs: T0 }],
    },
  });
  const seen = JSON.parse(answer.text);
  assert.deepEqual(seen.body, {
    key: "octo/repo#1",
    turns: [{
      event_id: "evt_1",
      prompt: "first",
      answer: "first answer",
      at: "2026-01-02T03:04:05.000Z",
    }],
  });
  assert.equal(seen.mode, 0o600, "readable by this user only");
  await assert.rejects(Deno.stat(seen.path), Deno.errors.NotFound, "removed once it exited");
});

Deno.test("command gets no AGENT_SESSION_FILE for an event of no conversation", async () => {
  const script = "console.log(Deno.env.get('AGENT_SESSION_FILE') ?? 'none')";
  const answer = await commandRunner([Deno.execPath(), "eval", script], {
    env: { DENO_DIR: Deno.env.get("DENO_DIR") ?? "/tmp/deno-dir-test" },
  })({ prompt: "p", eventId: "e" });
  assert.equal(answer.text, "none");
});

Deno.test("command leaves no agent-session folder behind when the file cannot be written", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "conversation-tmp-" });
  const before = Deno.env.get("TMPDIR");
  Deno.env.set("TMPDIR", tmp);
  try {
    const run = commandRunner([Deno.execPath(), "eval", "console.log('never run')"]);
    // A turn whose time cannot be written (no date) fails the write after the folder is made.
    const turns = [{ eventId: "evt_1", prompt: "first", answer: "a", atMs: NaN }];
    await assert.rejects(
      run({ prompt: "second", eventId: "evt_2", conversation: { key: "k", turns } }),
      /Cannot write the conversation's file/,
    );
    assert.deepEqual(await Array.fromAsync(Deno.readDir(tmp)), [], "its folder removed");
  } finally {
    if (before === undefined) Deno.env.delete("TMPDIR");
    else Deno.env.set("TMPDIR", before);
    await Deno.remove(tmp, { recursive: true });
  }
});
