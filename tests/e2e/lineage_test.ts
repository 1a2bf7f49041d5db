/**
 * End to end: an event's lineage through the real `main.ts gateway run`, with loopback servers
 * playing an OpenAI-compatible endpoint (which reports its token usage) and the Telegram Bot
 * API, and the real CLI as subprocesses: `webhook events --follow` sees the event arrive and be
 * delivered, `webhook show` prints its whole story, `webhook test` waits for its outcome, and a
 * database an older version wrote keeps its events. No output holds a secret or a token.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { startFakeTelegram } from "../fakes/chat_servers.ts";
import { githubExample } from "../fakes/github_examples.ts";
import { startFakeLlm } from "../fakes/llm_server.ts";
import { openStateStore } from "../../lib/state/sqlite/mod.ts";
import {
  cleanEnv,
  eventually,
  MAIN,
  runCli,
  signedGitHub,
  startGatewayProcess,
  tempHome,
} from "../_helpers.ts";

const MODEL = "test-model-2024-07-18";
const ANSWER = "Looks like a flaky test: rerun it.";

/** A state database as version 9 left it, holding one delivered event: its id. */
async function olderDatabase(home: string): Promise<string> {
  const path = join(home, "state", "gateway.db");
  const store = openStateStore(path, { backgroundCheckpoints: false });
  const event = {
    subscription: "old",
    eventLabel: "push",
    deliveryId: "d-old",
    dedupe: true,
    source: "github" as const,
    mode: "agent" as const,
    payload: "{}",
    prompt: "an old prompt",
    route: { deliver: "log", skills: [] },
    receivedAtMs: Date.now() - 60_000,
  };
  const id = (await store.accept(event) as { eventId: string }).eventId;
  await store.claimDue(Date.now(), 1);
  await store.saveResponse(id, "an old answer");
  await store.markDelivered(id, Date.now());
  await store.close();
  const db = new DatabaseSync(path);
  db.exec(
    "DROP TABLE parts; ALTER TABLE events DROP COLUMN headers; " +
      "ALTER TABLE events DROP COLUMN scheme; " +
      ["provider", "model", "prompt_tokens", "completion_tokens", "run_ms", "answer"]
        .map((column) => `ALTER TABLE attempts DROP COLUMN ${column};`).join(" ") +
      "PRAGMA user_version = 9;",
  );
  db.close();
  return id;
}

/** `main.ts webhook events --follow` as a subprocess, and what it printed so far. */
function startFollowing(env: Record<string, string>) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", MAIN, "webhook", "events", "--follow"],
    env: cleanEnv(env),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  let err = "";
  const decoder = new TextDecoder();
  const read = async (stream: ReadableStream<Uint8Array>, into: (text: string) => void) => {
    for await (const chunk of stream) into(decoder.decode(chunk, { stream: true }));
  };
  const done = Promise.all([
    read(child.stdout, (text) => out += text),
    read(child.stderr, (text) => err += text),
  ]);
  return {
    out: () => out,
    err: () => err,
    async stop(): Promise<number> {
      child.kill("SIGINT");
      const { code } = await child.status;
      await done;
      return code;
    },
  };
}

Deno.test("an event's lineage: events --follow, show and test through the real gateway", async () => {
  await using h = await tempHome();
  await using telegram = startFakeTelegram();
  const llm = await startFakeLlm({ answeredModel: MODEL, answer: () => ANSWER });
  await using _llm = { [Symbol.asyncDispose]: () => llm.close() };
  const env = { AGENT_HOME: h.home, ...telegram.env, ...llm.env };
  const oldId = await olderDatabase(h.home);
  await using gateway = await startGatewayProcess(env);
  const outputs: string[] = [];
  const cli = async (args: string[]) => {
    const result = await runCli(args, env);
    outputs.push(result.stdout, result.stderr);
    return result;
  };
  // Subscribe prints the secret on purpose, once: the outputs checked are the others'.
  const sub = await runCli([
    "webhook",
    "subscribe",
    "gh",
    "--events",
    "issues",
    "--prompt",
    "Triage {issue.title}",
    "--deliver",
    "telegram",
    "--deliver-chat-id",
    "4242",
  ], env);
  assert.equal(sub.code, 0, sub.stderr);
  const secret = sub.stdout.match(/Secret:\s+(\S+)/)![1];

  // events --follow lists the older event, then sees the new one arrive and be delivered.
  const following = startFollowing(env);
  await eventually(() => following.out().includes(oldId), { what: "the older event listed" });
  const payload = githubExample("issues", "opened");
  const request = await signedGitHub(secret, payload, { event: "issues", delivery: "d-e2e" });
  const response = await fetch(`${gateway.url}/webhooks/gh`, request);
  assert.equal(response.status, 202);
  const { event_id: id } = await response.json() as { event_id: string };
  await eventually(
    () => new RegExp(`${id}  gh  issues\\.opened  delivered after 1 try`).test(following.out()),
    { what: `${id} delivered in the followed lines`, timeoutMs: 20_000 },
  );
  assert.equal(await following.stop(), 0, following.err());
  outputs.push(following.out(), following.err());

  // show prints the whole story from a unique prefix.
  const shown = await cli(["webhook", "show", id.slice(0, 16)]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, new RegExp(`^Event ${id}: delivered\\n`));
  assert.match(shown.stdout, /verified by github\n/);
  assert.match(shown.stdout, /\n {2}x-hub-signature-256: \[redacted\]\n/);
  assert.match(shown.stdout, /\n {2}x-github-delivery: d-e2e\n/);
  const title = (payload.issue as { title: string }).title;
  assert.match(shown.stdout, new RegExp(`Prompt\\n {2}\\| Triage ${title.replace(/\W/g, ".")}`));
  const { prompt_tokens, completion_tokens } = llm.requests[0].usage!;
  assert.match(
    shown.stdout,
    new RegExp(
      `agent: openai ${MODEL}, ${prompt_tokens} prompt \\+ ${completion_tokens} completion tokens`,
    ),
  );
  assert.match(shown.stdout, new RegExp(`Answer\\n {2}\\| ${ANSWER}`));
  assert.equal(telegram.messages[0].to, "4242");
  assert.match(shown.stdout, /Delivered\n {2}part 1\/1 {2}telegram 4242 {2}message 1 {2}/);
  const json = JSON.parse((await cli(["webhook", "show", id, "--json"])).stdout);
  assert.equal(json.parts[0].message_id, "1");
  assert.equal(json.attempts_detail[0].agent_run.completion_tokens, completion_tokens);

  // test waits for its event's outcome and prints it.
  const tested = await cli([
    "webhook",
    "test",
    "gh",
    "--event",
    "issues",
    "--payload",
    '{"issue":{"title":"t"}}',
  ]);
  assert.equal(tested.code, 0, tested.stdout + tested.stderr);
  assert.match(tested.stdout, /^202 Accepted$/m);
  assert.match(
    tested.stdout,
    /Delivered in .*, after 1 attempt\.\n {2}agent: openai test-model-2024-07-18, \d+ prompt \+ \d+ completion tokens/,
  );
  assert.match(tested.stdout, /\n {2}part 1\/1: telegram 4242, message 2\n/);
  assert.match(tested.stdout, /\nIts whole story: agent webhook show evt_\w+\n$/);

  // The event stored before the upgrade is kept, and says what it was not stored with.
  const old = await cli(["webhook", "show", oldId]);
  assert.equal(old.code, 0, old.stderr);
  assert.match(old.stdout, new RegExp(`^Event ${oldId}: delivered`));
  assert.match(old.stdout, /headers were not kept/);
  assert.match(old.stdout, /Answer\n {2}\| an old answer/);

  for (const output of outputs) {
    for (const secretText of [secret, telegram.token, llm.env.OPENAI_API_KEY]) {
      assert.ok(!output.includes(secretText), `"${secretText}" printed in:\n${output}`);
    }
  }
});
