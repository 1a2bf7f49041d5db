/**
 * Reads the body of a 2xx answer to a chat completion request, as OpenAI-compatible endpoints
 * and what stands in front of them really send it, into the answer text or an AgentError that
 * says what came back. Chat completion object:
 * https://platform.openai.com/docs/api-reference/chat/object
 *
 * - A body that is not a chat completion (a captive portal's HTML page, a proxy's
 *   `{"error": {...}}` sent with 200, an empty or broken body) is the endpoint's own failure,
 *   whatever the prompt: retryable, and `unavailable` (as a 5xx is). A proxy that wraps a
 *   lasting error this way is retried until the attempts run out.
 * - `content` as a string, or as an array of text parts (`[{type: "text", text}]`, sent by some
 *   compatible servers): the parts' text is joined; other parts (reasoning) are left out.
 * - A refusal (`message.refusal` and no content) is permanent: the same prompt gets the same
 *   refusal.
 *
 * @module
 */
import { AgentError, cutText } from "../errors.ts";
import { asRecord } from "../subscriptions/payload.ts";

/** Characters of an unexpected body or of a refusal quoted in an error message. */
export const MAX_QUOTED_CHARS = 300;

/** A chat completion's answer. */
export interface CompletionAnswer {
  /** The first choice's text, trimmed, never empty. */
  text: string;
  /** Why the model stopped: `stop`, `length` (cut at the token limit), ... or `""` if unsaid. */
  finishReason: string;
  /** The completion's `model`: the model that answered, as the endpoint names it; if said. */
  model?: string;
  /** The completion's `usage` token counts, when it has both as whole numbers. */
  usage?: { promptTokens: number; completionTokens: number };
}

/** The body of a 2xx answer, as received. */
export interface CompletionBody {
  /** HTTP status, e.g. 200. */
  status: number;
  /** The `Content-Type` header, `""` when absent. */
  contentType: string;
  /** The whole body, as text. */
  text: string;
}

/**
 * Reads a chat completion answer.
 * @param body status, content type and text of the answer
 * @param hideSecrets removes the API key (and any other secret) from endpoint text before it is
 *   quoted in an error message
 * @returns the first choice's text and finish reason
 * @throws AgentError retryable and `unavailable` when the body is not a chat completion (quoting
 *   at most {@link MAX_QUOTED_CHARS} characters of it); permanent when the model refused (with
 *   its words); retryable when the answer is empty
 */
export function readCompletion(
  body: CompletionBody,
  hideSecrets: (text: string) => string,
): CompletionAnswer {
  const quote = (text: string) => cutText(hideSecrets(text.trim()), MAX_QUOTED_CHARS);
  const notACompletion = (what: string, quoted?: string) =>
    notAChatCompletion(body.status, what, quoted);
  if (body.text.trim() === "") throw notACompletion("an empty body");
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.text);
  } catch {
    const type = body.contentType.split(";")[0].trim();
    const what = !type
      ? "a body of no content type"
      : type.includes("json")
      ? `${type} that does not parse`
      : type;
    throw notACompletion(what, quote(body.text));
  }
  const completion = asRecord(parsed);
  if (completion?.error !== undefined && completion.error !== null) {
    const error = asRecord(completion.error);
    const words = typeof error?.message === "string" ? error.message : JSON.stringify(error);
    throw notACompletion("an error", quote(words));
  }
  if (!Array.isArray(completion?.choices)) {
    throw notACompletion('JSON without "choices"', quote(JSON.stringify(parsed)));
  }
  const choice = asRecord(completion.choices[0]);
  const finishReason = completion.choices.length === 0
    ? "no choices"
    : String(choice?.finish_reason ?? "");
  const message = asRecord(choice?.message);
  const content = contentText(message?.content);
  if (content === undefined) {
    throw notACompletion(
      "a content that is neither text nor text parts",
      quote(JSON.stringify(message?.content)),
    );
  }
  const text = content.trim();
  if (text) return { text, finishReason, ...costOf(completion ?? {}) };
  const refusal = typeof message?.refusal === "string" ? message.refusal.trim() : "";
  if (refusal) {
    throw new AgentError(`The model refused to answer: ${quote(refusal)}`, { permanent: true });
  }
  throw new AgentError(`The model returned an empty answer (finish_reason: ${finishReason})`);
}

/**
 * The endpoint's own failure for an answer that is not a chat completion: retryable, and
 * `unavailable` (as a 5xx is).
 * @param status the answer's HTTP status
 * @param what what came instead (`text/html`, `an empty body`, `more than 8 MiB`)
 * @param quoted what to quote of it, if anything
 * @returns `The LLM endpoint answered HTTP <status> with <what>, not a chat completion[: quoted]`
 */
export function notAChatCompletion(status: number, what: string, quoted?: string): AgentError {
  const quote = quoted === undefined ? "" : `: ${quoted}`;
  return new AgentError(
    `The LLM endpoint answered HTTP ${status} with ${what}, not a chat completion${quote}`,
    { unavailable: true },
  );
}

/**
 * The model and token counts of a completion, each when the endpoint sent it in the shape
 * OpenAI documents (`model` a string; `usage.prompt_tokens` and `usage.completion_tokens` whole
 * numbers): some compatible servers send neither, or counts of another shape.
 */
function costOf(completion: Record<string, unknown>): Pick<CompletionAnswer, "model" | "usage"> {
  const model = typeof completion.model === "string" && completion.model.trim()
    ? completion.model.trim()
    : undefined;
  const usage = asRecord(completion.usage);
  const tokens = (value: unknown) =>
    typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  const promptTokens = tokens(usage?.prompt_tokens);
  const completionTokens = tokens(usage?.completion_tokens);
  return {
    ...(model === undefined ? {} : { model }),
    ...(promptTokens === undefined || completionTokens === undefined
      ? {}
      : { usage: { promptTokens, completionTokens } }),
  };
}

/** The text of `content`: a string, the joined text parts of an array, `""` for none. */
function contentText(content: unknown): string | undefined {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return undefined;
  return content
    .map((part) => asRecord(part))
    .filter((part) => part?.type === "text" && typeof part.text === "string")
    .map((part) => part?.text as string)
    .join("");
}
