/**
 * The `openai` runner against answers that are not a plain chat completion (a captive portal's
 * page, a proxy's error sent with 200, text parts, a refusal, a cut-off answer) and against
 * connections that fail before any answer (TLS, DNS). The endpoint is a loopback server.
 */
import assert from "node:assert/strict";
import { type AgentSettings, createAgentRunner } from "../../../lib/agents/mod.ts";
import { agentError } from "./_assert.ts";
import { withFakeLlm } from "./_fake_llm.ts";

const deps = { fetch, env: {} };

/** The error of a run whose endpoint answers HTTP 200 with `raw` of `contentType`. */
async function errorForAnswer(raw: string, contentType: string) {
  let error: Awaited<ReturnType<typeof agentError>> | undefined;
  await withFakeLlm({ answer: () => ({ raw, contentType }) }, async (settings) => {
    error = await agentError(createAgentRunner(settings, deps)({ prompt: "x", eventId: "e" }));
  });
  return error!;
}

/** An openai runner for a loopback endpoint of the test's own, at `port`. */
function runnerAt(port: number) {
  return createAgentRunner({
    provider: "openai",
    model: "test-model",
    baseUrl: `http://127.0.0.1:${port}/v1`,
    apiKey: "test-key",
    timeoutSeconds: 30,
  }, deps);
}

Deno.test("openai runner reports a captive portal's HTML page (HTTP 200) as retryable, quoting it", async () => {
  const page = "<html><body>Captive portal login</body></html>";
  const error = await errorForAnswer(page, "text/html");
  assert.equal(error.permanent, false, "the portal goes away once logged in");
  assert.equal(error.unavailable, true, "every run fails the same way meanwhile");
  assert.equal(
    error.message,
    `The LLM endpoint answered HTTP 200 with text/html, not a chat completion: ${page}`,
  );
});

Deno.test("openai runner reports a proxy's error object sent with HTTP 200 as retryable, with its message", async () => {
  const body = JSON.stringify({ error: { message: "model overloaded", type: "server_error" } });
  const error = await errorForAnswer(body, "application/json");
  assert.equal(error.permanent, false);
  assert.equal(error.unavailable, true);
  assert.match(error.message, /HTTP 200 with an error, not a chat completion: model overloaded$/);
});

Deno.test("openai runner reports an empty JSON body (HTTP 200) as retryable, saying it was empty", async () => {
  const error = await errorForAnswer("", "application/json");
  assert.equal(error.permanent, false);
  assert.equal(
    error.message,
    "The LLM endpoint answered HTTP 200 with an empty body, not a chat completion",
  );
});

Deno.test("openai runner quotes at most 300 characters of an unexpected body, and never the API key", async () => {
  const apiKey = "sk-test-SECRETKEY-1234567890";
  const page = `<html>Proxy saw Authorization: Bearer ${apiKey}. ${"padding ".repeat(200)}</html>`;
  const answers = [{ raw: page, contentType: "text/html" }, { status: 502, message: page }];
  await withFakeLlm({ apiKey, answer: (_, index) => answers[index] }, async (settings) => {
    const run = createAgentRunner({ ...settings, apiKey }, deps);
    for (const expected of [/HTTP 200 with text\/html/, /502/]) {
      const error = await agentError(run({ prompt: "x", eventId: "e" }));
      assert.match(error.message, expected);
      assert.match(error.message, /Bearer \*\*\*\. padding/, "the key is taken out");
      assert.doesNotMatch(error.message, /SECRETKEY/);
      assert.ok(error.message.length < 400, `${error.message.length} characters`);
      assert.match(error.message, /…$/, "the cut is marked");
    }
  });
});

Deno.test("openai runner joins an answer sent as text parts, leaving other parts out", async () => {
  const content = [
    { type: "reasoning", text: "The user wants a summary. " },
    { type: "text", text: "The build failed " },
    { type: "text", text: "on a flaky test." },
  ];
  const answer = () => ({ completion: { message: { content }, finishReason: "stop" } });
  await withFakeLlm({ answer }, async (settings) => {
    const { text } = await createAgentRunner(settings, deps)({ prompt: "x", eventId: "e" });
    assert.equal(text, "The build failed on a flaky test.");
  });
});

Deno.test("openai runner reports a refusal as permanent, with the model's words", async () => {
  const message = { content: null, refusal: "I can't help with that." };
  const answer = () => ({ completion: { message, finishReason: "stop" } });
  await withFakeLlm({ answer }, async (settings) => {
    const error = await agentError(
      createAgentRunner(settings, deps)({ prompt: "x", eventId: "e" }),
    );
    assert.equal(error.permanent, true, "the same prompt gets the same refusal");
    assert.equal(error.unavailable, false, "the prompt's own");
    assert.equal(error.message, "The model refused to answer: I can't help with that.");
  });
});

Deno.test("openai runner delivers an answer cut at the length limit with a marker line, and warns", async () => {
  const message = { content: "The answer is cut in the midd" };
  const answer = () => ({ completion: { message, finishReason: "length" } });
  await withFakeLlm({ answer }, async (settings) => {
    const warnings: [string, Record<string, unknown>][] = [];
    const run = createAgentRunner(settings, {
      ...deps,
      warn: (template, properties) => void warnings.push([template, properties]),
    });
    const { text } = await run({ prompt: "x", eventId: "evt_42" });
    assert.equal(
      text,
      "The answer is cut in the midd\n\n[answer cut off: the model reached its length limit]",
    );
    assert.deepEqual(warnings, [[
      "the answer to {event_id} was cut off: the model reached its length limit",
      { event_id: "evt_42", model: "test-model" },
    ]]);
  });
});

/** The innermost cause of `error`: what really went wrong under "fetch failed". */
function rootCause(error: Error): Error {
  let current = error;
  while (current.cause instanceof Error) current = current.cause;
  return current;
}

function settingsFor(baseUrl: string): AgentSettings {
  return { provider: "openai", model: "m", baseUrl, apiKey: "k", timeoutSeconds: 5 };
}

Deno.test("openai runner names the TLS failure behind a connection error", async () => {
  // A plain HTTP server asked for TLS: the handshake fails.
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    return new Response("not TLS");
  });
  try {
    const url = `https://127.0.0.1:${server.addr.port}/v1`;
    const error = await agentError(
      createAgentRunner(settingsFor(url), deps)({ prompt: "x", eventId: "e" }),
    );
    assert.equal(error.permanent, false);
    assert.equal(error.unavailable, true);
    const root = rootCause(error).message;
    assert.notEqual(root, "fetch failed");
    assert.ok(
      error.message.startsWith("Cannot reach the LLM endpoint: fetch failed: ") &&
        error.message.endsWith(root),
      error.message,
    );
  } finally {
    await server.shutdown();
  }
});

Deno.test("openai runner names the DNS failure behind a connection error", async () => {
  // .invalid never resolves (RFC 6761 §6.4).
  const run = createAgentRunner(settingsFor("http://llm.invalid/v1"), deps);
  const error = await agentError(run({ prompt: "x", eventId: "e" }));
  assert.equal(error.unavailable, true);
  const root = rootCause(error).message;
  assert.match(error.message, /^Cannot reach the LLM endpoint: fetch failed: .*llm\.invalid/);
  assert.ok(error.message.endsWith(root), error.message);
});

Deno.test("openai runner stops reading an answer over 8 MiB and retries, saying so", async () => {
  const huge = `{"choices":[{"message":{"content":"${"x".repeat(9 * 1024 * 1024)}"}}]}`;
  const error = await errorForAnswer(huge, "application/json");
  assert.equal(error.permanent, false);
  assert.equal(error.unavailable, true);
  assert.equal(
    error.message,
    "The LLM endpoint answered HTTP 200 with more than 8 MiB, not a chat completion: the rest " +
      "was not read",
  );
});

Deno.test("openai runner reads an error page only up to 64 KiB, never the whole of a huge one", async () => {
  const chunk = new TextEncoder().encode("x".repeat(65_536));
  let sent = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () =>
    new Response(
      new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent >= 256 * 1_048_576) return controller.close();
          controller.enqueue(chunk);
          sent += chunk.byteLength;
        },
      }),
      { status: 500, headers: { "content-type": "text/html" } },
    ));
  try {
    const run = runnerAt(server.addr.port);
    const error = await agentError(run({ prompt: "x", eventId: "e" }));
    assert.equal(error.permanent, false);
    assert.match(error.message, /500/);
    assert.ok(error.message.length < 500, `${error.message.length} characters`);
    assert.ok(sent < 16 * 1_048_576, `${sent / 1_048_576} MiB sent of 256`);
  } finally {
    await server.shutdown();
  }
});

Deno.test("openai runner stops reading a trickling answer when its run is given up on", async () => {
  let cancelled = false;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    let timer: ReturnType<typeof setInterval>;
    let ender: ReturnType<typeof setTimeout>;
    return new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"choices":[{"message":{"content":"'));
          timer = setInterval(() => controller.enqueue(new TextEncoder().encode("x")), 20);
          // Ends by itself after 3 s, so that the server can shut down if nobody cancels.
          ender = setTimeout(() => {
            clearInterval(timer);
            controller.close();
          }, 3000);
        },
        cancel() {
          cancelled = true;
          clearInterval(timer);
          clearTimeout(ender);
        },
      }),
      { headers: { "content-type": "application/json" } },
    );
  });
  try {
    const run = runnerAt(server.addr.port);
    const giveUp = new AbortController();
    setTimeout(() => giveUp.abort(), 200);
    await agentError(run({ prompt: "x", eventId: "e", signal: giveUp.signal }));
    const started = performance.now();
    while (!cancelled && performance.now() - started < 2000) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.ok(cancelled, "the server is still sending the answer to no one");
  } finally {
    await server.shutdown();
  }
});
