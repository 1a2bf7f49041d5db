/**
 * End to end: silent answers and per-route agent options through the real `main.ts gateway
 * run`, a loopback OpenAI-compatible endpoint that records what it is asked, and the Telegram
 * fake. A `[SILENT]` answer sends nothing and ends `delivered` with the note `webhook show`
 * prints; a subscription's `--model`, `--max-tokens`, `--temperature` and `--system-prompt`
 * reach the LLM request while another subscription keeps `agent.*`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startFakeTelegram } from "../fakes/chat_servers.ts";
import { startFakeLlm } from "../fakes/llm_server.ts";
import {
  enabledConfig,
  eventually,
  runCli,
  signedGitHub,
  startGatewayProcess,
  tempHome,
} from "../_helpers.ts";

/** Subscribes `name` to Telegram chat 4242 with more flags; returns its secret. */
async function subscribe(env: Record<string, string>, name: string, flags: string[] = []) {
  const sub = await runCli([
    "webhook",
    "subscribe",
    name,
    "--prompt",
    "Issue {issue.title}",
    "--deliver",
    "telegram",
    "--deliver-chat-id",
    "4242",
    ...flags,
  ], env);
  assert.equal(sub.code, 0, sub.stderr);
  return { stdout: sub.stdout, secret: sub.stdout.match(/Secret:\s+(\S+)/)![1] };
}

/** Posts a signed `issues.opened` to `name`; returns the event id. */
async function post(url: string, name: string, secret: string, title: string) {
  const payload = { action: "opened", issue: { number: 1, title } };
  const response = await fetch(`${url}/webhooks/${name}`, await signedGitHub(secret, payload));
  assert.equal(response.status, 202);
  return (await response.json() as { event_id: string }).event_id;
}

Deno.test("a [SILENT] answer delivers nothing and the event is delivered, the agent silent", async () => {
  await using h = await tempHome();
  await using telegram = startFakeTelegram();
  const llm = await startFakeLlm({
    answer: (request) =>
      request.messages.at(-1)!.content.includes("quiet") ? "  [SILENT]\n" : "Worth a look.",
  });
  await using _llm = { [Symbol.asyncDispose]: () => llm.close() };
  const env = { AGENT_HOME: h.home, ...telegram.env, ...llm.env };
  await using gateway = await startGatewayProcess(env);
  const { secret } = await subscribe(env, "gh");

  const quiet = await post(gateway.url, "gh", secret, "quiet");
  const loud = await post(gateway.url, "gh", secret, "loud");
  await eventually(() => telegram.messages.length === 1, { what: "the loud answer sent" });
  const shown = await eventually(async () => {
    const result = await runCli(["webhook", "show", quiet], env);
    return /: delivered\n/.test(result.stdout) ? result.stdout : undefined;
  }, { what: "the quiet event delivered", timeoutMs: 20_000 });
  assert.match(shown, /Delivered\n {2}none: the agent chose silence/);
  assert.match(shown, /Answer\n {2}\| \[SILENT\]/);
  await eventually(async () => {
    const result = await runCli(["webhook", "show", loud], env);
    return /: delivered\n/.test(result.stdout);
  }, { what: "the loud event delivered" });
  assert.deepEqual(telegram.messages.map((message) => message.text), ["Worth a look."]);
  // The default system prompt allows the marker.
  assert.match(llm.requests[0].messages[0].content, /answer exactly \[SILENT\]/);
  assert.match(gateway.output(), /delivered nothing: the agent chose silence/);
});

Deno.test("agent.silent_marker in config.yaml replaces [SILENT]", async () => {
  await using h = await tempHome({
    config: enabledConfig(0, "agent:\n  silent_marker: NOTHING\n"),
  });
  await using telegram = startFakeTelegram();
  const llm = await startFakeLlm({ answer: () => "NOTHING" });
  await using _llm = { [Symbol.asyncDispose]: () => llm.close() };
  const env = { AGENT_HOME: h.home, ...telegram.env, ...llm.env };
  await using gateway = await startGatewayProcess(env);
  const { secret } = await subscribe(env, "gh");
  const id = await post(gateway.url, "gh", secret, "t");
  await eventually(async () => {
    const result = await runCli(["webhook", "show", id], env);
    return /none: the agent chose silence/.test(result.stdout);
  }, { what: "the event delivered silently", timeoutMs: 20_000 });
  assert.equal(telegram.messages.length, 0);
  assert.match(llm.requests[0].messages[0].content, /answer exactly NOTHING/);
  assert.doesNotMatch(gateway.output(), /unknown|not a known/i);
});

Deno.test("a subscription's --model, --max-tokens, --temperature and --system-prompt reach the LLM", async () => {
  await using h = await tempHome();
  await using telegram = startFakeTelegram();
  // The fake serves only the tuned route's model: the other route's runs, asking for
  // agent.model, are refused (404), which is enough to see what they asked for.
  const llm = await startFakeLlm({ model: "big-model", answer: () => "ok" });
  await using _llm = { [Symbol.asyncDispose]: () => llm.close() };
  const env = { AGENT_HOME: h.home, ...telegram.env, ...llm.env, AGENT_MODEL: "default-model" };
  await using gateway = await startGatewayProcess(env);
  const plain = await subscribe(env, "plain");
  const tuned = await subscribe(env, "tuned", [
    "--model",
    "big-model",
    "--max-tokens",
    "321",
    "--temperature",
    "0.3",
    "--system-prompt",
    "Answer in French.",
  ]);
  const listed = await runCli(["webhook", "list"], env);
  assert.match(listed.stdout, /Agent: {4}model big-model, max 321 tokens, temperature 0\.3/);
  assert.match(listed.stdout, /System: {3}Answer in French\./);

  await post(gateway.url, "tuned", tuned.secret, "tuned one");
  await eventually(() => telegram.messages.length === 1, { what: "the tuned answer sent" });
  await post(gateway.url, "plain", plain.secret, "plain one");
  await eventually(() => llm.requests.length === 2, { what: "the plain run asked" });

  const [tunedRequest, plainRequest] = llm.requests;
  assert.equal(tunedRequest.model, "big-model");
  assert.equal(tunedRequest.body.max_tokens, 321);
  assert.equal(tunedRequest.body.temperature, 0.3);
  const system = tunedRequest.messages[0].content;
  assert.ok(system.endsWith("\n\nAnswer in French."), system);
  assert.equal(plainRequest.model, "default-model");
  assert.equal(plainRequest.body.max_tokens, undefined);
  assert.equal(plainRequest.body.temperature, undefined);
  assert.doesNotMatch(plainRequest.messages[0].content, /French/);
});

Deno.test("subscribe refuses a temperature over 2, a max tokens of 0 and a blank model", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const env = { AGENT_HOME: h.home };
  for (
    const [flags, message] of [
      [["--temperature", "2.5"], /--temperature must be a number from 0 to 2, got "2\.5"/],
      [["--max-tokens", "0"], /--max-tokens must be a whole number of tokens \(≥ 1\)/],
      [["--max-tokens", "1.5"], /--max-tokens must be a whole number/],
      [["--model", " "], /--model must be a model name/],
    ] as const
  ) {
    const result = await runCli(["webhook", "subscribe", "gh", ...flags], env);
    assert.equal(result.code, 2, result.stdout + result.stderr);
    assert.match(result.stderr, message);
  }
});
