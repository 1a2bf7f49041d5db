/**
 * A `command` agent runner for the tests, built through `createAgentRunner` as the gateway
 * builds it.
 *
 * @module
 */
import {
  type AgentProcessNotes,
  type AgentRunner,
  type AgentSettings,
  createAgentRunner,
} from "../../../lib/agents/mod.ts";

/**
 * A runner of `command`, with the test's PATH and `options.env` as its environment.
 * @param command the program and its arguments
 * @param options `timeoutSeconds` (@default {30}), `env` (added to PATH), `processNotes`
 * @returns the runner
 * @throws ConfigError as `createAgentRunner` does (an empty command)
 */
export function commandRunner(
  command: string[],
  options: {
    timeoutSeconds?: number;
    env?: Record<string, string>;
    processNotes?: AgentProcessNotes;
  } = {},
): AgentRunner {
  const settings: AgentSettings = {
    provider: "command",
    model: "",
    command,
    timeoutSeconds: options.timeoutSeconds ?? 30,
  };
  return createAgentRunner(settings, {
    fetch,
    env: { PATH: Deno.env.get("PATH"), ...options.env },
    processNotes: options.processNotes,
  });
}
