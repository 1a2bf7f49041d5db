/**
 * Agent runners (docs/durability.md): turn a rendered prompt into an answer, either through any
 * OpenAI-compatible chat completions endpoint (`openai.ts`) or by running a configured program
 * (`command.ts`).
 *
 * Every failure is an {@link AgentError} with a readable cause: `permanent` when retrying cannot
 * help (bad request, bad credentials, unknown model, the model's refusal, program not found),
 * otherwise retryable, with `retryAfterSeconds` when the endpoint said how long to wait.
 *
 * It also exports what the gateway needs at start to kill the `command` agents a gateway that
 * died left running ({@link killLeftoverAgents}).
 *
 * @module
 */
import { ConfigError } from "../errors.ts";
import type { AgentProcessNotes } from "./_leftovers.ts";
import { createCommandRunner } from "./command.ts";
import { createOpenAiRunner } from "./openai.ts";
import { DEFAULT_SILENT_MARKER, silenceInstruction } from "./skills.ts";
import type { AgentConversation } from "./conversation.ts";

export { type AgentProcessNotes, agentProcessNotes, killLeftoverAgents } from "./_leftovers.ts";
export { programPath } from "./_program_path.ts";
export { DEFAULT_BASE_URL } from "./openai.ts";
export { DEFAULT_SILENT_MARKER } from "./skills.ts";
export {
  type AgentConversation,
  type ConversationTurn,
  DEFAULT_SESSION_BUDGET_TOKENS,
  estimateTokens,
  fitTurns,
} from "./conversation.ts";

/** The `agent:` section of `config.yaml`, resolved. */
export interface AgentSettings {
  /** `openai`: any OpenAI-compatible endpoint; `command`: a program reading stdin. */
  provider: "openai" | "command";
  /**
   * Model name sent to the endpoint (ignored by `command`): `AGENT_MODEL`, else `agent.model`
   * (merged by `loadConfig`).
   */
  model: string;
  /** Endpoint base, e.g. `https://api.openai.com/v1`. `OPENAI_BASE_URL` when absent. */
  baseUrl?: string;
  /** API key. `OPENAI_API_KEY` when absent. */
  apiKey?: string;
  /** Program and its arguments, for `provider: command`; run without a shell. */
  command?: string[];
  /** Longest an agent run may take, in seconds. @default {300} (in config) */
  timeoutSeconds: number;
  /**
   * `agent.silent_marker`: an answer that is exactly this (trimmed) is delivered nowhere
   * (docs/subscriptions.md#silent-answers). @default {"[SILENT]"}
   */
  silentMarker?: string;
}

/** What a runner is asked to do. */
export interface AgentRequest {
  /** The rendered prompt (the user message). */
  prompt: string;
  /** Base system prompt plus the subscription's skills. */
  systemPrompt?: string;
  /**
   * The subscription's `system_prompt`, added last: after the skills and the sentence that
   * allows a silent answer, so that a route can have the last word.
   */
  routeSystemPrompt?: string;
  /** The subscription's `model`, over `agent.model` (`AGENT_MODEL` for a `command` program). */
  model?: string;
  /** The subscription's `max_tokens`: the answer's token limit (`AGENT_MAX_TOKENS` for `command`). */
  maxTokens?: number;
  /** The subscription's `temperature`, 0 to 2 (`AGENT_TEMPERATURE` for `command`). */
  temperature?: number;
  /** The event being answered, for logs and for the program's environment. */
  eventId: string;
  /**
   * The conversation the event belongs to, with the earlier turns the run is given
   * (docs/subscriptions.md#conversations): `openai` sends them as chat messages before the
   * prompt; `command` gets them in the JSON file named by `AGENT_SESSION_FILE`.
   */
  conversation?: AgentConversation;
  /**
   * Aborted when the gateway stops before the run ends: the runner then fails at once with an
   * AgentError. A `command` program is killed with what it started; an HTTP request to the LLM
   * is no longer waited for (it ends with the process).
   */
  signal?: AbortSignal;
}

/** What one run answered, and what it cost: what the event's lineage shows of the run. */
export interface AgentAnswer {
  /** The answer text, trimmed and never empty. */
  text: string;
  /** The provider that ran it. */
  provider: AgentSettings["provider"];
  /**
   * The model that answered, as the endpoint names it in its completion (often a dated version
   * of `agent.model`: `gpt-4o-mini-2024-07-18`), else the one asked for; undefined for `command`.
   */
  model?: string;
  /**
   * The completion's token counts (`usage.prompt_tokens`, `usage.completion_tokens`:
   * https://platform.openai.com/docs/api-reference/chat/object); undefined when the endpoint
   * sent none, and for `command`, whose program reports none.
   */
  usage?: { promptTokens: number; completionTokens: number };
  /**
   * True when the whole answer was the silent marker: the agent found nothing worth reporting,
   * and nothing is delivered.
   */
  silent?: boolean;
}

/**
 * Runs the agent once.
 * @returns the answer, with the model and token counts when the provider reports them
 * @throws AgentError on any failure (see the module documentation)
 */
export type AgentRunner = (request: AgentRequest) => Promise<AgentAnswer>;

/** What a runner may touch. */
export interface AgentDeps {
  /** HTTP client, for `provider: openai`. */
  fetch: typeof fetch;
  /** Environment (process merged with `.env`): fallbacks for the settings, and the program's. */
  env: Record<string, string | undefined>;
  /**
   * Where a `command` agent's process group is noted while it runs, so that the next start
   * can kill it if the gateway dies meanwhile ({@link agentProcessNotes},
   * {@link killLeftoverAgents}); none when omitted.
   */
  processNotes?: AgentProcessNotes;
  /**
   * Told what did not fail a run but its reader should know (an answer cut at the model's
   * length limit): a LogTape-style message template and its properties. The gateway logs it as
   * a warning; nothing is told when omitted.
   */
  warn?: (message: string, properties: Record<string, unknown>) => void;
}

/**
 * Builds the runner the settings ask for.
 * @param settings the `agent:` configuration
 * @param deps fetch, environment, and optionally the process notes and a warning sink
 * @returns the runner; building it contacts nothing (a missing API key or model is reported by
 *   each run, as a permanent AgentError)
 * @throws ConfigError when `provider: command` has no command, or the provider is unknown
 * @example
 * ```ts
 * const run = createAgentRunner(
 *   { provider: "command", model: "", command: ["llm", "-m", "gpt-4o-mini"], timeoutSeconds: 300 },
 *   { fetch, env: Deno.env.toObject() },
 * );
 * try {
 *   const { text, usage } = await run({ prompt: "Summarise this issue: ...", eventId: "e1" });
 * } catch (error) {
 *   if (error instanceof AgentError && !error.permanent) {
 *     // retry later, no sooner than error.retryAfterSeconds
 *   }
 * }
 * ```
 */
export function createAgentRunner(settings: AgentSettings, deps: AgentDeps): AgentRunner {
  return withSilence(providerRunner(settings, deps), settings.silentMarker);
}

/** The runner of the configured provider. */
function providerRunner(settings: AgentSettings, deps: AgentDeps): AgentRunner {
  if (settings.provider === "openai") return createOpenAiRunner(settings, deps);
  if (settings.provider === "command") return createCommandRunner(settings, deps);
  throw new ConfigError(
    `Unknown agent provider "${String(settings.provider)}": use openai or command`,
  );
}

/**
 * Tells the model it may answer the silent marker, and marks such an answer `silent`. The
 * route's own system prompt comes after that sentence, so a route can forbid silence.
 * @param run the provider's runner
 * @param marker `agent.silent_marker` @default {@link DEFAULT_SILENT_MARKER}
 */
function withSilence(run: AgentRunner, marker = DEFAULT_SILENT_MARKER): AgentRunner {
  return async (request) => {
    const { routeSystemPrompt, ...rest } = request;
    const parts = [request.systemPrompt, silenceInstruction(marker), routeSystemPrompt];
    const systemPrompt = parts.filter((part) => part).join("\n\n");
    const answer = await run({ ...rest, systemPrompt });
    return answer.text.trim() === marker ? { ...answer, silent: true } : answer;
  };
}
