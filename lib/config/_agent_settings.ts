/**
 * The `agent` section of `config.yaml`, with `AGENT_MODEL`, `OPENAI_BASE_URL` and
 * `OPENAI_API_KEY` from the environment: the provider, its command or endpoint, the timeout,
 * the concurrency and the retry policy, each checked against its bounds.
 *
 * @module
 */
import { DEFAULT_RETRY, MAX_WAIT_SECONDS, type RetryPolicy } from "../worker/retry.ts";
import { objectAt, toInteger, toText, toUrl, unknownKeys } from "./_typed_values.ts";
import type { Config } from "./mod.ts";
import { ConfigError } from "../errors.ts";
import { DEFAULT_SILENT_MARKER } from "../agents/mod.ts";

/** Largest `agent.timeout_seconds`: one day (timers cannot count past 24.8 days anyway). */
export const MAX_TIMEOUT_SECONDS = 86_400;
/** Largest `agent.retry.initial_delay_seconds` and `max_delay_seconds`: one week. */
export const MAX_RETRY_DELAY_SECONDS = MAX_WAIT_SECONDS;

/**
 * Reads the `agent` section.
 * @param yaml the `agent` mapping of `config.yaml` (empty when absent)
 * @param env the process env merged over `.env`
 * @param file the path of `config.yaml`, for messages
 * @returns the agent settings, defaults filled in
 * @throws ConfigError naming the key and the file, for a value out of bounds or malformed
 */
export function agentSettings(
  yaml: Record<string, unknown>,
  env: Record<string, string | undefined>,
  file: string,
): Config["agent"] {
  const at = (key: string) => ({ file, key: `agent.${key}` });
  const { provider, command } = agentProgram(yaml, file);
  const retry = objectAt(yaml, ["retry"], file, ["agent"]);
  const delays = retryDelays(retry, file);
  return {
    provider,
    model: env.AGENT_MODEL || toText(yaml.model, at("model")) || "gpt-4o-mini",
    baseUrl:
      toUrl(env.OPENAI_BASE_URL, { file: "the environment or .env", key: "OPENAI_BASE_URL" }) ??
        toUrl(yaml.base_url, at("base_url")),
    apiKey: env.OPENAI_API_KEY || undefined,
    command,
    silentMarker: silentMarker(yaml.silent_marker, file),
    timeoutSeconds: toInteger(yaml.timeout_seconds, at("timeout_seconds"), {
      min: 1,
      max: MAX_TIMEOUT_SECONDS,
    }) ?? 300,
    maxConcurrency: toInteger(yaml.max_concurrency, at("max_concurrency"), { min: 1, max: 1000 }) ??
      2,
    retry: {
      maxAttempts: toInteger(retry.max_attempts, at("retry.max_attempts"), { min: 1, max: 100 }) ??
        DEFAULT_RETRY.maxAttempts,
      ...delays,
    },
  };
}

/**
 * `agent.provider` and `agent.command` (the argv of the `command` provider).
 * @throws ConfigError for another provider, a command that is not a list of strings, or the
 *   `command` provider without one
 */
function agentProgram(
  yaml: Record<string, unknown>,
  file: string,
): { provider: "openai" | "command"; command: string[] | undefined } {
  const provider = toText(yaml.provider, { file, key: "agent.provider" }) ?? "openai";
  if (provider !== "openai" && provider !== "command") {
    throw new ConfigError(
      `agent.provider in ${file} must be "openai" or "command", not ${JSON.stringify(provider)}`,
      { file },
    );
  }
  const command = yaml.command;
  if (
    command !== undefined &&
    (!Array.isArray(command) || command.length === 0 || command.some((a) => typeof a !== "string"))
  ) {
    throw new ConfigError(`agent.command in ${file} must be a list of strings (argv)`, { file });
  }
  if (provider === "command" && command === undefined) {
    throw new ConfigError(`agent.provider is "command" in ${file} but agent.command is not set`, {
      file,
    });
  }
  return { provider, command: command as string[] | undefined };
}

/**
 * `agent.silent_marker`: the whole answer that means the agent chose silence
 * (docs/subscriptions.md#silent-answers), trimmed as answers are.
 * @returns the marker, {@link DEFAULT_SILENT_MARKER} when absent
 * @throws ConfigError for a value that is not text, or is blank (every answer would be
 *   compared with nothing)
 */
function silentMarker(value: unknown, file: string): string {
  const marker = toText(value, { file, key: "agent.silent_marker" });
  if (marker === undefined) return DEFAULT_SILENT_MARKER;
  if (marker.trim() === "") {
    throw new ConfigError(`agent.silent_marker in ${file} is blank: give a word such as [SILENT]`, {
      file,
    });
  }
  return marker.trim();
}

/**
 * The delays of `agent.retry`, over {@link DEFAULT_RETRY}.
 * @param retry the `agent.retry` mapping
 * @throws ConfigError for a value out of bounds, or a first delay longer than the longest
 */
function retryDelays(
  retry: Record<string, unknown>,
  file: string,
): Pick<RetryPolicy, "initialDelayMs" | "maxDelayMs"> {
  const at = (key: string) => ({ file, key: `agent.${key}` });
  const initialDelaySeconds = toInteger(
    retry.initial_delay_seconds,
    at("retry.initial_delay_seconds"),
    { min: 0, max: MAX_RETRY_DELAY_SECONDS },
  );
  const maxDelaySeconds = toInteger(retry.max_delay_seconds, at("retry.max_delay_seconds"), {
    min: 1,
    max: MAX_RETRY_DELAY_SECONDS,
  });
  // Both set, the wrong way round: every delay would quietly be the maximum.
  if (
    initialDelaySeconds !== undefined && maxDelaySeconds !== undefined &&
    initialDelaySeconds > maxDelaySeconds
  ) {
    throw new ConfigError(
      `agent.retry.initial_delay_seconds (${initialDelaySeconds}) in ${file} is longer than ` +
        `agent.retry.max_delay_seconds (${maxDelaySeconds}): ` +
        "the first delay cannot exceed the longest",
      { file },
    );
  }
  return {
    initialDelayMs: initialDelaySeconds === undefined
      ? DEFAULT_RETRY.initialDelayMs
      : 1000 * initialDelaySeconds,
    maxDelayMs: maxDelaySeconds === undefined ? DEFAULT_RETRY.maxDelayMs : 1000 * maxDelaySeconds,
  };
}

/**
 * One warning per key of the `agent` section (and its `retry`) that no version reads: a
 * misspelt `max_concurency:` would leave the default in force unsaid.
 * @param yaml the `agent` mapping of `config.yaml`
 * @param file the path of `config.yaml`
 * @returns one sentence per unknown key
 */
export function agentWarnings(yaml: Record<string, unknown>, file: string): string[] {
  const retry = yaml.retry !== null && typeof yaml.retry === "object" && !Array.isArray(yaml.retry)
    ? yaml.retry as Record<string, unknown>
    : {};
  return [
    ...unknownKeys(yaml, {
      path: "agent",
      known: [
        "provider",
        "command",
        "model",
        "base_url",
        "timeout_seconds",
        "max_concurrency",
        "retry",
        "silent_marker",
      ],
      file,
    }),
    ...unknownKeys(retry, {
      path: "agent.retry",
      known: ["max_attempts", "initial_delay_seconds", "max_delay_seconds"],
      file,
    }),
  ];
}
