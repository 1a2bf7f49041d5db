/**
 * End to end: a conversation (docs/subscriptions.md#conversations) across a kill -9 of the real
 * `main.ts gateway run` and a restart, with the loopback OpenAI-compatible endpoint and the
 * Telegram fake: no event lost, none answered twice, each turn given once and in order.
 *
 * @module
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

const SECRET = "session-crash-secret-0123";
const ISSUE = githubExample("issues", "opened");

/** One row of `agent webhook events --json`. */
interface EventRow {
  id: string;
  status: string;
}

/** The messages of a request after the system prompt, as `role: content`. */
function chat(request: FakeLlmRequest): string[] {
  return request.messages.slice(1).map((message) => `${message.role}: ${message.content}`);
}

/** Posts an `issues.opened` about issue 7 titled `title`; returns its event id. */
async function post(url: string, title: string): Promise<string> {
  const payload = { ...ISSUE, issue: { ...(ISSUE.issue as object), number: 7, title } };
  const response = await fetch(`${url}/webhooks/gh`, await signedGitHub(SECRET, payload));
  assert.equal(response.status, 202);
  return String((await response.json()).event_id);
}

/** `agent webhook events --json`, by event id. */
async function statuses(env: Record<string, string>): Promise<Map<string, string>> {
  return new Map((await webhookEvents<EventRow>(env)).map((row) => [row.id, row.status]));
}

Deno.test("kill -9 during a conversation's run: after a restart each event is answered once, with each earlier turn once, in order", async () => {
  await using h = await tempHome({
    config: `${
      enabledConfig(0)
    }agent:\n  max_concurrency: 4\n  retry: {initial_delay_seconds: 0}\n`,
  });
  await using telegram = startFakeTelegram();
  let hang = true;
  const llm = await startFakeLlm({
    answer: (request) => {
      const prompt = request.messages.at(-1)!.content;
      return hang && prompt === "second" ? { hang: true } : `answer to ${prompt}`;
    },
  });
  await using _llm = { [Symbol.asyncDispose]: () => llm.close() };
  const env = { AGENT_HOME: h.home, ...telegram.env, ...llm.env };
  const sub = await runCli([
    "webhook",
    "subscribe",
    "gh",
    "--prompt",
    "{issue.title}",
    "--session",
    "{repository.full_name}#{issue.number}",
    "--deliver",
    "telegram:4242",
    "--secret",
    SECRET,
  ], env);
  assert.equal(sub.code, 0, sub.stderr);
  assert.match(sub.stdout, /Session: key \{repository\.full_name\}#\{issue\.number\}/);

  await using gateway = await startGatewayProcess(env);
  const first = await post(gateway.url, "first");
  await eventually(() => telegram.messages.length === 1, { what: "the first answer sent" });
  const second = await post(gateway.url, "second");
  await eventually(() => llm.requests.length === 2, { what: "the second run hanging" });
  const third = await post(gateway.url, "third");
  assert.notEqual(await gateway.stop("SIGKILL"), 0);
  const before = await statuses(env);
  assert.deepEqual([first, second, third].map((id) => before.get(id)), [
    "delivered",
    "running",
    "queued",
  ]);
  assert.equal(llm.requests.length, 2, "the third waited for the second");

  hang = false;
  await using restarted = await startGatewayProcess(env);
  await eventually(async () => {
    const after = await statuses(env);
    return [first, second, third].every((id) => after.get(id) === "delivered");
  }, { what: "every event delivered", timeoutMs: 20_000 });
  assert.deepEqual(telegram.messages.map((m) => m.text), [
    "answer to first",
    "answer to second",
    "answer to third",
  ]);
  const [, , secondAgain, thirdRun] = llm.requests;
  assert.equal(llm.requests.length, 4, "the first ran once; the second again; the third once");
  assert.deepEqual(chat(secondAgain), [
    "user: first",
    "assistant: answer to first",
    "user: second",
  ]);
  assert.deepEqual(chat(thirdRun), [
    "user: first",
    "assistant: answer to first",
    "user: second",
    "assistant: answer to second",
    "user: third",
  ]);
  assert.equal(await restarted.stop("SIGTERM"), 0);
});
