/**
 * The `openai` runner against connections that fail before any answer (TLS, DNS): the error
 * names what failed. The endpoint is a loopback server.
 */
import assert from "node:assert/strict";
import { type AgentSettings, createAgentRunner } from "../../../lib/agents/mod.ts";
import { agentError } from "./_assert.ts";

const deps = { fetch, env: {} };

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
