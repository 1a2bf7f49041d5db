/**
 * The `openai` provider: one chat completion per event through the official `openai` SDK,
 * against api.openai.com or any OpenAI-compatible endpoint (vLLM, Ollama, LiteLLM, ...).
 * Chat Completions API: https://platform.openai.com/docs/api-reference/chat/create
 *
 * The SDK's own retries are off (`maxRetries: 0`): the worker retries with backoff and keeps
 * every attempt in the state database. The SDK is loaded at the first run, not when the
 * gateway starts: a gateway that never runs an agent does not hold it in memory.
 *
 * @module
 */
import type OpenAI from "openai";
import { readBoundedText } from "../targets/bounded_body.ts";
import { AgentError, cutText, errorChainText, redact } from "../errors.ts";
import { parseRetryAfterSeconds } from "../worker/retry.ts";
import {
  type CompletionBody,
  MAX_QUOTED_CHARS,
  notAChatCompletion,
  readCompletion,
} from "./_completion.ts";
import type { AgentDeps, AgentRequest, AgentRunner, AgentSettings } from "./mod.ts";

/** The endpoint used when neither `agent.base_url` nor `OPENAI_BASE_URL` is set. */
export const DEFAULT_BASE_URL = "https://api.openai.com/v1";

/** API keys shorter than this are placeholders, left in messages. */
const MIN_SECRET_CHARS = 8;

/**
 * Line added below an answer the model stopped at its token limit (`finish_reason: length`),
 * so that whoever reads it knows the rest is missing.
 */
export const CUT_OFF_MARKER = "[answer cut off: the model reached its length limit]";

/**
 * Builds a runner for an OpenAI-compatible endpoint.
 *
 * `loadConfig` has already merged the settings with the environment (process env, then `.env`,
 * then `config.yaml`); the environment here only fills what is still empty when settings are
 * built by hand: `apiKey` else `OPENAI_API_KEY`, `baseUrl` else `OPENAI_BASE_URL` else
 * api.openai.com, `model` else `AGENT_MODEL`. An endpoint other than
 * api.openai.com may need no key (local servers): the SDK then sends the placeholder `no-key`.
 *
 * An answer cut at the model's token limit (`finish_reason: length`) is delivered with
 * {@link CUT_OFF_MARKER} on a line of its own below it, and `deps.warn` is told. The answer
 * names the model the completion says answered and its `usage` token counts, when it has them.
 * Error messages quote what the endpoint said, without the API key.
 * @param settings the `agent:` configuration
 * @param deps `fetch` (used by the SDK), the environment and `warn`
 * @returns the runner; a missing key or model is reported by each run as a permanent AgentError,
 *   so a gateway that only does direct deliveries still starts. A body that is not a chat
 *   completion, a refusal and an empty answer fail as `_completion.ts` describes
 */
export function createOpenAiRunner(settings: AgentSettings, deps: AgentDeps): AgentRunner {
  const baseURL = settings.baseUrl || deps.env.OPENAI_BASE_URL || DEFAULT_BASE_URL;
  const defaultModel = settings.model || deps.env.AGENT_MODEL || "";
  const apiKey = settings.apiKey || deps.env.OPENAI_API_KEY ||
    (baseURL === DEFAULT_BASE_URL ? "" : "no-key");
  let client: Promise<OpenAI> | undefined;
  const clientOnce = () =>
    client ??= loadSdk().then((sdk) =>
      sdkClient(sdk, deps, { apiKey, baseURL, timeoutSeconds: settings.timeoutSeconds })
    );

  // A key of a few characters is a local server's placeholder ("EMPTY", "x"), not a secret:
  // taking every "x" out of a message would make it unreadable. (Deno's fetch errors quote the
  // URL without its user and password.)
  const hideSecrets = (text: string) =>
    apiKey.length >= MIN_SECRET_CHARS ? redact(text, apiKey) : text;

  return async (request) => {
    const { prompt, systemPrompt, eventId, signal } = request;
    // A route's own model stands in for agent.model, with the same client.
    const model = request.model || defaultModel;
    if (!apiKey || !model) {
      const missing = apiKey
        ? "no model (agent.model or AGENT_MODEL)"
        : "OPENAI_API_KEY is not set (in the environment, or in .env when the gateway started: " +
          "restart it after editing .env)";
      throw new AgentError(`Cannot run the agent: ${missing}`, { permanent: true });
    }
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [];
    if (systemPrompt) messages.push({ role: "system", content: systemPrompt });
    // The conversation's earlier turns, as the chat they were: each prompt and its answer.
    for (const turn of request.conversation?.turns ?? []) {
      messages.push({ role: "user", content: turn.prompt });
      messages.push({ role: "assistant", content: turn.answer });
    }
    messages.push({ role: "user", content: prompt });
    let body: CompletionBody;
    try {
      // The signal is not handed to the SDK, which keeps memory for good per request given
      // one; the request left behind on a stop ends with the process. The body is read here,
      // not by the SDK, so that an answer that is not a chat completion can be quoted.
      const completion = { model, messages, ...sampling(request) };
      const posted = clientOnce().then((sdk) => postCompletion(sdk, completion, signal));
      body = await untilAborted(posted, signal);
    } catch (error) {
      // Undefined only when the SDK itself could not be loaded: its error is then the one told.
      const sdk = await loadSdk().catch(() => undefined);
      throw toAgentError(error, { sdk, timeoutSeconds: settings.timeoutSeconds, hideSecrets });
    }
    const answer = readCompletion(body, hideSecrets);
    // The model the endpoint says answered (a dated version of the one asked for), else that one.
    const run = { provider: "openai", model: answer.model ?? model, usage: answer.usage } as const;
    if (answer.finishReason !== "length") return { ...run, text: answer.text };
    deps.warn?.("the answer to {event_id} was cut off: the model reached its length limit", {
      event_id: eventId,
      model,
    });
    return { ...run, text: `${answer.text}\n\n${CUT_OFF_MARKER}` };
  };
}

/**
 * A route's `max_tokens` and `temperature`, as the request fields they set (absent: the
 * endpoint's defaults). `max_tokens` rather than `max_completion_tokens`: the one that
 * OpenAI-compatible servers (vLLM, Ollama, LiteLLM) read.
 * https://platform.openai.com/docs/api-reference/chat/create
 */
function sampling(
  request: Pick<AgentRequest, "maxTokens" | "temperature">,
): { max_tokens?: number; temperature?: number } {
  return {
    ...(request.maxTokens === undefined ? {} : { max_tokens: request.maxTokens }),
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
  };
}

/** The `openai` module: its client and the error classes runs are classified by. */
type Sdk = typeof import("openai");

let sdkModule: Promise<Sdk> | undefined;

/** Loads the `openai` module once, at the first run that needs it. */
function loadSdk(): Promise<Sdk> {
  return sdkModule ??= import("openai");
}

/**
 * The SDK's client: no retries of its own, redirects not followed, error bodies bounded.
 * @param sdk the `openai` module
 * @param deps `fetch` and the environment (`OPENAI_ORG_ID`, `OPENAI_PROJECT_ID`)
 * @param options the key, the endpoint base and the time limit of a request, in seconds
 */
function sdkClient(
  sdk: Sdk,
  deps: AgentDeps,
  options: { apiKey: string; baseURL: string; timeoutSeconds: number },
): OpenAI {
  return new sdk.default({
    apiKey: options.apiKey,
    baseURL: options.baseURL,
    organization: deps.env.OPENAI_ORG_ID ?? null,
    project: deps.env.OPENAI_PROJECT_ID ?? null,
    // Redirects are not followed: fetch would turn the POST into a GET (302, 303), sending the
    // prompt nowhere and failing with an unrelated 405. The error names where it points.
    fetch: (input, init) => boundedErrors(deps.fetch(input, { ...init, redirect: "manual" })),
    maxRetries: 0,
    timeout: options.timeoutSeconds * 1000,
  });
}

/**
 * Most bytes of an answer read (8 MiB). A chat completion carries the answer and some metadata;
 * the longest answers models give are well under 1 MiB even with every character escaped. More
 * is something else talking, and is not held in memory.
 */
const MAX_COMPLETION_BYTES = 8 * 1024 * 1024;

/** Most bytes of an error answer read; its message is quoted at 300 characters anyway. */
const MAX_ERROR_BYTES = 65_536;

/**
 * The endpoint's answer, with the body of a non-2xx one cut to {@link MAX_ERROR_BYTES}: the SDK
 * reads an error's body whole before the runner sees it, so a huge error page would be held in
 * memory. A 2xx body is left to {@link postCompletion}, which bounds it too.
 */
async function boundedErrors(answer: Promise<Response>): Promise<Response> {
  const response = await answer;
  if (response.ok || response.body === null) return response;
  const { text } = await readBoundedText(response, MAX_ERROR_BYTES);
  const headers = new Headers(response.headers);
  headers.delete("content-length"); // the whole page's
  return new Response(text, { status: response.status, statusText: response.statusText, headers });
}

/**
 * Sends the request; the SDK throws APIError for a non-2xx status.
 * @throws AgentError retryable and `unavailable` for an answer over {@link MAX_COMPLETION_BYTES}
 */
async function postCompletion(
  client: OpenAI,
  request: OpenAI.Chat.ChatCompletionCreateParamsNonStreaming,
  signal: AbortSignal | undefined,
): Promise<CompletionBody> {
  const response = await client.chat.completions.create(request).asResponse();
  // A body that trickles in is dropped when the run is given up on, not read to its end.
  const { text, complete } = await readBoundedText(response, MAX_COMPLETION_BYTES, signal);
  if (!complete) {
    const what = `more than ${MAX_COMPLETION_BYTES / 1024 / 1024} MiB`;
    throw notAChatCompletion(response.status, what, "the rest was not read");
  }
  return { status: response.status, contentType: response.headers.get("content-type") ?? "", text };
}

/**
 * Settles as `promise` does, or rejects with an AgentError as soon as `signal` aborts (the
 * promise is then left to end on its own).
 */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  const stopped = () => new AgentError("The agent run was stopped: the gateway is stopping");
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(stopped());
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      promise.catch(() => {});
      reject(stopped());
    };
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * Classifies an SDK failure: 429, 408, 409, 5xx, timeouts and connection errors are retryable
 * (with the endpoint's `retry-after-ms` or `Retry-After`); redirects and other 4xx answers are
 * permanent. Connection errors, 429 and 5xx are the endpoint's own (`unavailable`); a timeout
 * may be the prompt's (a long answer). A connection error names its causes (DNS, TLS, refused);
 * the endpoint's words are cut to {@link MAX_QUOTED_CHARS} characters.
 */
function toAgentError(
  error: unknown,
  options: { sdk?: Sdk; timeoutSeconds: number; hideSecrets: (text: string) => string },
): AgentError {
  const { sdk, timeoutSeconds, hideSecrets } = options;
  if (error instanceof AgentError) return error;
  if (sdk === undefined) return sdkError(error, hideSecrets);
  const { APIConnectionError, APIConnectionTimeoutError, APIError } = sdk;
  if (error instanceof APIConnectionTimeoutError) {
    return new AgentError(`The LLM endpoint did not answer within ${timeoutSeconds} s`, {
      cause: error,
    });
  }
  if (error instanceof APIConnectionError) {
    // The SDK's own message is only "Connection error.": what failed is in its causes.
    const detail = error.cause === undefined ? "" : `: ${hideSecrets(errorChainText(error.cause))}`;
    return new AgentError(`Cannot reach the LLM endpoint${detail}`, {
      unavailable: true,
      cause: error,
    });
  }
  if (error instanceof APIError && error.status !== undefined) {
    const status = error.status;
    if (status >= 300 && status < 400) {
      const location = error.headers?.get("location") ?? "another address";
      return new AgentError(
        `The LLM endpoint redirected (HTTP ${status}) to ${location}, which is not followed: ` +
          "set OPENAI_BASE_URL (or agent.base_url) to where it points",
        { permanent: true, cause: error },
      );
    }
    // OpenAI answers 429 "Request too large for <model> ... on tokens per min" to a prompt larger
    // than the whole per-minute limit: no wait makes it fit.
    const tooLarge = status === 429 && /request too large/i.test(error.message);
    const retryable = !tooLarge &&
      (status === 408 || status === 409 || status === 429 || status >= 500);
    const words = cutText(hideSecrets(error.message), MAX_QUOTED_CHARS);
    return new AgentError(`LLM endpoint answered ${words}`, {
      permanent: !retryable,
      retryAfterSeconds: retryAfter(error.headers),
      unavailable: retryable && (status === 429 || status >= 500),
      cause: error,
    });
  }
  return sdkError(error, hideSecrets);
}

/** An error that is none of the SDK's answers: retryable, its causes named without secrets. */
function sdkError(error: unknown, hideSecrets: (text: string) => string): AgentError {
  return new AgentError(`Agent run failed: ${hideSecrets(errorChainText(error))}`, {
    cause: error,
  });
}

/** The wait the endpoint asked for, in seconds: `retry-after-ms` (OpenAI's), else `Retry-After`. */
function retryAfter(headers: Headers | undefined): number | undefined {
  const millis = Number(headers?.get("retry-after-ms") ?? NaN);
  if (Number.isFinite(millis) && millis >= 0) return millis / 1000;
  return parseRetryAfterSeconds(headers?.get("retry-after"), Date.now());
}
