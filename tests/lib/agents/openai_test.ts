import assert from "node:assert/strict";
import { ConfigError } from "../../../lib/errors.ts";
import { type AgentSettings, createAgentRunner } from "../../../lib/agents/mod.ts";
import { startFakeLlm } from "../../fakes/llm_server.ts";
import { eventually } from "../../_helpers.ts";
import { agentError } from "./_assert.ts";
import { withFakeLlm } from "./_fake_llm.ts";
import { silenceInstruction } from "../../../lib/agents/skills.ts";

const deps = { fetch, env: {} };

/** Words of "Be brief", the sentence that allows silence, and "CI failed", as the fake counts. */
const PROMPT_WORDS = 4 + silenceInstruction("[SILENT]").split(/\s+/).length;

Deno.test("openai runner sends the system prompt and the prompt, and returns the answer", async () => {
  await withFakeLlm({ answer: () => "  Looks like a flaky test.\n" }, async (settings, fake) => {
    const run = createAgentRunner(settings, deps);
    const answer = await run({ prompt: "CI failed", systemPrompt: "Be brief", eventId: "evt_1" });
    assert.equal(answer.text, "Looks like a flaky test.");
    assert.equal(fake.requests.length, 1);
    assert.equal(fake.requests[0].authorization, "Bearer test-key");
    assert.equal(fake.requests[0].model, "test-model");
    assert.deepEqual(fake.requests[0].messages, [
      { role: "system", content: `Be brief\n\n${silenceInstruction("[SILENT]")}` },
      { role: "user", content: "CI failed" },
    ]);
  });
});

Deno.test("openai runner names the model that answered and the completion's token counts", async () => {
  const options = { answeredModel: "test-model-2024-07-18", answer: () => "Three words here" };
  await withFakeLlm(options, async (settings, fake) => {
    const run = createAgentRunner(settings, deps);
    const answer = await run({ prompt: "CI failed", systemPrompt: "Be brief", eventId: "e" });
    assert.deepEqual(answer, {
      provider: "openai",
      text: "Three words here",
      model: "test-model-2024-07-18",
      usage: { promptTokens: PROMPT_WORDS, completionTokens: 3 },
    });
    assert.equal(fake.requests[0].usage?.prompt_tokens, PROMPT_WORDS, "the fake counts words");
  });
});

Deno.test("openai runner leaves the token counts out when the completion has no usage", async () => {
  const answers = [null, { prompt_tokens: "12", completion_tokens: 3 }];
  const answer = (_: unknown, index: number) => ({
    completion: { message: { content: "ok" }, finishReason: "stop", usage: answers[index] },
  });
  await withFakeLlm({ answer }, async (settings) => {
    const run = createAgentRunner(settings, deps);
    for (const _ of answers) {
      const result = await run({ prompt: "x", eventId: "e" });
      assert.equal(result.usage, undefined);
      assert.equal(result.model, "test-model");
    }
  });
});

Deno.test("openai runner takes key, base URL and model from the environment when unset", async () => {
  await withFakeLlm({}, async (settings, fake) => {
    const run = createAgentRunner(
      { provider: "openai", model: "", timeoutSeconds: 5 },
      {
        fetch,
        env: { OPENAI_API_KEY: "test-key", OPENAI_BASE_URL: fake.url, AGENT_MODEL: "test-model" },
      },
    );
    assert.equal((await run({ prompt: "hi", eventId: "evt_1" })).text, "echo: hi");
    assert.deepEqual(fake.requests[0].messages, [
      { role: "system", content: silenceInstruction("[SILENT]") },
      { role: "user", content: "hi" },
    ]);
    assert.equal(settings.model, "test-model");
  });
});

Deno.test("openai runner reports 429 as retryable with the Retry-After seconds", async () => {
  await withFakeLlm({ answer: () => ({ status: 429, retryAfter: "7" }) }, async (settings) => {
    const error = await agentError(
      createAgentRunner(settings, deps)({ prompt: "x", eventId: "e" }),
    );
    assert.equal(error.permanent, false);
    assert.equal(error.retryAfterSeconds, 7);
    assert.match(error.message, /429/);
    assert.equal(error.unavailable, true, "the endpoint's, not the prompt's");
  });
});

Deno.test("openai runner reports a 429 for a request larger than the per-minute limit as permanent", async () => {
  const message = "Request too large for gpt-4o in organization org-x on tokens per min (TPM): " +
    "Limit 30000, Requested 45000.";
  await withFakeLlm({ answer: () => ({ status: 429, message }) }, async (settings) => {
    const error = await agentError(
      createAgentRunner(settings, deps)({ prompt: "x", eventId: "e" }),
    );
    assert.equal(error.permanent, true, "no wait makes it fit");
    assert.equal(error.unavailable, false, "the prompt's own");
    assert.match(error.message, /Request too large/);
  });
});

Deno.test("openai runner reports 500 as retryable and makes a single request", async () => {
  await withFakeLlm({ answer: () => ({ status: 500 }) }, async (settings, fake) => {
    const error = await agentError(
      createAgentRunner(settings, deps)({ prompt: "x", eventId: "e" }),
    );
    assert.equal(error.permanent, false);
    assert.equal(error.retryAfterSeconds, undefined);
    assert.equal(error.unavailable, true);
    assert.equal(fake.requests.length, 1, "the SDK must not retry on its own");
  });
});

Deno.test("openai runner reports a wrong API key and an unknown model as permanent", async () => {
  await withFakeLlm({}, async (settings) => {
    const badKey = createAgentRunner({ ...settings, apiKey: "wrong" }, deps);
    const keyError = await agentError(badKey({ prompt: "x", eventId: "e" }));
    assert.equal(keyError.permanent, true);
    assert.match(keyError.message, /401/);
    assert.doesNotMatch(keyError.message, /wrong/, "the key is not echoed");
    const badModel = createAgentRunner({ ...settings, model: "gpt-nope" }, deps);
    const modelError = await agentError(badModel({ prompt: "x", eventId: "e" }));
    assert.equal(modelError.permanent, true);
    assert.match(modelError.message, /404/);
  });
});

Deno.test("openai runner reports 400 as permanent", async () => {
  await withFakeLlm({ answer: () => ({ status: 400, message: "context too long" }) }, async (s) => {
    const error = await agentError(createAgentRunner(s, deps)({ prompt: "x", eventId: "e" }));
    assert.equal(error.permanent, true);
    assert.equal(error.unavailable, false);
    assert.match(error.message, /context too long/);
  });
});

Deno.test("openai runner reports an empty answer as retryable", async () => {
  await withFakeLlm({ answer: () => "   " }, async (settings) => {
    const error = await agentError(
      createAgentRunner(settings, deps)({ prompt: "x", eventId: "e" }),
    );
    assert.equal(error.permanent, false);
    assert.equal(error.unavailable, false, "an empty answer may be the prompt's");
    assert.match(error.message, /empty answer/);
  });
});

Deno.test("openai runner times out a hanging endpoint with a retryable error", async () => {
  await withFakeLlm({ answer: () => ({ hang: true }) }, async (settings) => {
    const run = createAgentRunner({ ...settings, timeoutSeconds: 0.2 }, deps);
    const error = await agentError(run({ prompt: "x", eventId: "e" }));
    assert.equal(error.permanent, false);
    assert.equal(error.unavailable, false, "a long answer may be the prompt's");
    assert.match(error.message, /did not answer within 0.2 s/);
  });
});

Deno.test("openai runner stops waiting for a hanging endpoint when the run is aborted", async () => {
  await withFakeLlm({ answer: () => ({ hang: true }) }, async (settings, fake) => {
    const stop = new AbortController();
    const run = createAgentRunner(settings, deps)({
      prompt: "p",
      eventId: "e",
      signal: stop.signal,
    });
    await eventually(() => fake.requests.length === 1, { what: "the request to arrive" });
    const started = performance.now();
    stop.abort();
    const error = await agentError(run);
    assert.match(error.message, /stopped: the gateway is stopping/);
    assert.ok(performance.now() - started < 1_000, "at once, not at the 5 s timeout");
  });
});

Deno.test("openai runner reports a refused connection as retryable", async () => {
  const fake = await startFakeLlm();
  const url = fake.url;
  await fake.close();
  const run = createAgentRunner(
    { provider: "openai", model: "m", baseUrl: url, apiKey: "k", timeoutSeconds: 5 },
    deps,
  );
  const error = await agentError(run({ prompt: "x", eventId: "e" }));
  assert.equal(error.permanent, false);
  assert.equal(error.unavailable, true);
  assert.match(error.message, /Cannot reach the LLM endpoint/);
});

Deno.test("openai runner without an API key for api.openai.com fails permanently, naming the variable", async () => {
  const run = createAgentRunner({ provider: "openai", model: "m", timeoutSeconds: 5 }, deps);
  const error = await agentError(run({ prompt: "x", eventId: "e" }));
  assert.equal(error.permanent, true);
  assert.match(error.message, /OPENAI_API_KEY/);
});

Deno.test("createAgentRunner() refuses an unknown provider with ConfigError", () => {
  assert.throws(
    () => createAgentRunner({ provider: "magic" as "openai", model: "m", timeoutSeconds: 1 }, deps),
    ConfigError,
  );
});

Deno.test("openai runner does not follow a redirect: a permanent error names where it points", async () => {
  const methods: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    methods.push(`${request.method} ${new URL(request.url).pathname}`);
    return new Response(null, {
      status: 302,
      headers: { location: "https://llm.example/v2/chat/completions" },
    });
  });
  try {
    const settings: AgentSettings = {
      provider: "openai",
      model: "test-model",
      baseUrl: `http://127.0.0.1:${server.addr.port}/v1`,
      apiKey: "test-key",
      timeoutSeconds: 5,
    };
    const error = await agentError(
      createAgentRunner(settings, deps)({ prompt: "x", eventId: "e" }),
    );
    assert.equal(error.permanent, true);
    assert.match(error.message, /redirected \(HTTP 302\) to https:\/\/llm\.example\/v2/);
    assert.match(error.message, /OPENAI_BASE_URL/);
    assert.deepEqual(methods, ["POST /v1/chat/completions"], "no GET to the new address");
  } finally {
    await server.shutdown();
  }
});
