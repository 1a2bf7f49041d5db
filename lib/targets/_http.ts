/**
 * The one HTTP helper every chat and code-hosting target uses: a JSON POST whose answer is
 * turned into success, a wait-and-retry (HTTP 429), or a typed {@link TargetError}, as
 * `_platform_answers.ts` reads it.
 *
 * Redirects are not followed: fetch would turn the POST into a GET (RFC 9110 §15.4.2-3), which
 * a platform answers with a list and a 200, so the message would be lost but recorded as sent.
 *
 * An answer is read up to a bound that every real answer fits in ({@link answerLimitBytes}),
 * so a misbehaving server or proxy answering hundreds of megabytes costs the gateway that
 * bound, not the whole body: a longer 2xx is a retryable error, a longer error answer is
 * described by its beginning.
 *
 * @module
 */

import { cutText, errorChainText, redact, TargetError } from "../errors.ts";
import { type BoundedText, readBoundedText } from "./bounded_body.ts";
import { classifyAnswer, type Failure } from "./_platform_answers.ts";
import type { SendContext } from "./_target.ts";

/** Wait assumed when a platform answers 429 without saying how long, in seconds. */
const DEFAULT_RETRY_AFTER_SECONDS = 1;
/** A platform answering 429 with a zero wait forever must not keep one delivery spinning. */
const MAX_RATE_LIMIT_RETRIES = 5;
/** A request with no answer after this long is abandoned (retryable). */
const REQUEST_TIMEOUT_MS = 30_000;
/** Platform error descriptions are cut here so a huge HTML error page cannot flood the log. */
const MAX_DETAIL_CHARS = 300;

/** One JSON POST to a platform. */
export interface PostJsonRequest {
  /** Platform name for messages: `Telegram`, `Slack`, ... */
  platform: string;
  /** What is being done, for messages: `sendMessage to chat 123`. */
  action: string;
  /** Full endpoint URL. */
  url: string;
  /** Headers added to `Content-Type: application/json` (auth, API version). */
  headers: Record<string, string>;
  /** Serialised as JSON. */
  body: unknown;
  /** The token: removed from every message this helper builds (it can sit in the URL). */
  secret: string;
  /** Reads a 2xx answer; returns a failure when the platform reports one in the body. */
  inspect?: (body: unknown) => Failure | undefined;
}

/**
 * POSTs `request.body` as JSON and returns the parsed answer. Waits out HTTP 429 with
 * `ctx.sleep` while `ctx.rateLimitBudget` allows, then gives up.
 *
 * @param ctx The send context: `fetch`, `sleep` and this delivery's 429 wait budget.
 * @param request What to send and how to describe it.
 * @returns The answer body, parsed as JSON when it is JSON, else its text.
 * @throws {TargetError} retryable (with `retryAfterSeconds`) for 429 beyond the budget, 5xx,
 *   408, network errors and a 2xx answer longer than any the platform gives (about 1 MiB, see
 *   {@link answerLimitBytes}); permanent for other 4xx, carrying the platform's description.
 */
export async function postJson(ctx: SendContext, request: PostJsonRequest): Promise<unknown> {
  for (let attempt = 0;; attempt++) {
    const { status, headers, body } = await exchange(ctx, request);
    const failure = classifyAnswer({ status, headers, body }, request);
    if (failure === undefined) return body;
    if (failure.kind !== "rate_limited") {
      const where = status >= 200 && status < 300 ? "" : ` (HTTP ${status})`;
      throw new TargetError(
        `${request.platform} ${request.action} failed${where}: ${
          cutText(redact(failure.detail, request.secret), MAX_DETAIL_CHARS)
        }`,
        {
          permanent: failure.kind === "permanent",
          retryAfterSeconds: failure.kind === "retryable" ? failure.retryAfterSeconds : undefined,
          status,
        },
      );
    }
    const seconds = failure.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS;
    const waitMs = Math.ceil(seconds * 1000);
    if (attempt >= MAX_RATE_LIMIT_RETRIES || waitMs > ctx.rateLimitBudget.remainingMs) {
      throw new TargetError(
        `${request.platform} ${request.action} was rate limited: retry after ${seconds} s`,
        { retryAfterSeconds: seconds, status },
      );
    }
    ctx.rateLimitBudget.remainingMs -= waitMs;
    await ctx.sleep(waitMs);
  }
}

async function exchange(
  ctx: SendContext,
  request: PostJsonRequest,
): Promise<{ status: number; headers: Headers; body: unknown }> {
  // One deadline for the whole exchange, answer body included.
  const signal = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  const requestJson = JSON.stringify(request.body);
  let response: Response;
  try {
    response = await ctx.fetch(request.url, {
      method: "POST",
      headers: { "Content-Type": "application/json; charset=utf-8", ...request.headers },
      body: requestJson,
      redirect: "manual",
      signal,
    });
  } catch (error) {
    throw failedExchange(error, request, "failed");
  }
  const { status } = response;
  const limitBytes = answerLimitBytes(requestJson);
  let answer: BoundedText;
  try {
    answer = await readBoundedText(response, limitBytes);
  } catch (error) {
    // The platform may have taken the message: the retry can post it twice (at least once).
    throw failedExchange(error, request, `answered HTTP ${status}, then failed`);
  }
  const { text } = answer;
  if (!answer.complete && status >= 200 && status < 300) {
    // No answer of the platform is that long: something in between answered. Retryable, like
    // any 2xx that is not the platform's answer; an error status is still read by its status.
    throw new TargetError(
      `${request.platform} ${request.action} answered HTTP ${status} with more than ${
        Math.ceil(limitBytes / 1024)
      } KiB, which is not a ${request.platform} answer: the rest was not read`,
      { status },
    );
  }
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // A proxy's HTML error page: keep the text as the description.
  }
  return { status, headers: response.headers, body };
}

/** A retryable error for a request that got no (whole) answer: timeout, refused, cut off. */
function failedExchange(error: unknown, request: PostJsonRequest, what: string): TargetError {
  // Fetch errors quote the URL, and Telegram's URL holds the token: never pass them on as is.
  const reason = error instanceof DOMException && error.name === "TimeoutError"
    ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`
    : redact(errorChainText(error), request.secret);
  return new TargetError(`${request.platform} ${request.action} ${what}: ${reason}`);
}

/**
 * Room for everything in an answer but the echoed message, in bytes (1 MiB). The largest
 * answers are the created message itself: Telegram's `Message`, Discord's message object,
 * Slack's `message`, a GitHub comment or a GitLab note with author, links and reactions, a
 * few KiB besides the text.
 */
const ANSWER_BYTES_BESIDES_ECHO = 1_048_576;
/**
 * Bytes an answer may spend on each UTF-16 code unit of the request it echoes: JSON escapes
 * one as at most six bytes (`\u003c`), and UTF-8 needs at most three per code unit.
 */
const ECHO_BYTES_PER_REQUEST_UNIT = 6;

/**
 * The most bytes read of the answer to `requestJson`: 1 MiB, plus six bytes per code unit of
 * the request, since platforms echo the message and a GitLab note may be 1,000,000 characters.
 *
 * @param requestJson The request body as sent (JSON text).
 * @returns The bound in bytes; about 1 MiB for a chat message, about 7 MiB for the longest note.
 */
function answerLimitBytes(requestJson: string): number {
  return ANSWER_BYTES_BESIDES_ECHO + ECHO_BYTES_PER_REQUEST_UNIT * requestJson.length;
}
