/**
 * Runs a test body against a loopback OpenAI-compatible endpoint ({@link startFakeLlm}), with
 * `openai` runner settings that point at it.
 *
 * @module
 */
import type { AgentSettings } from "../../../lib/agents/mod.ts";
import { type FakeLlm, type FakeLlmOptions, startFakeLlm } from "../../fakes/llm_server.ts";

/**
 * Starts the fake, runs `body` with settings for it (model `test-model`, key `test-key`, 5 s
 * timeout), and closes the fake however `body` ends.
 * @param options the fake's answers (and key and model)
 * @param body the test, given the settings and the running fake
 */
export async function withFakeLlm(
  options: FakeLlmOptions,
  body: (settings: AgentSettings, fake: FakeLlm) => Promise<void>,
): Promise<void> {
  const fake = await startFakeLlm(options);
  try {
    await body({
      provider: "openai",
      model: "test-model",
      baseUrl: fake.url,
      apiKey: "test-key",
      timeoutSeconds: 5,
    }, fake);
  } finally {
    await fake.close();
  }
}
