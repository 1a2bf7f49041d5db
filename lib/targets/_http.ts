/**
 * The one HTTP helper every chat and code-hosting target uses: a JSON POST whose answer is
 * turned into success, a wait-and-retry (HTTP 429), or a typed {@link TargetError}.
 *
 * Rate limits, as documented by each platform:
 * - HTTP `Retry-After` (seconds): https://www.rfc-editor.org/rfc/rfc9110#field.retry-after
 * - Telegram `parameters.retry_after`: https://core.telegram.org/bots/api#responseparameters
 * - Discord: 429 with `retry_after` (float seconds); its `X-RateLimit-*` headers come with most
 *   answers, so a 403 is a refusal whatever they say:
 *   https://discord.com/developers/docs/topics/rate-limits
 * - Slack `ratelimited` + `Retry-After`: https://api.slack.com/apis/rate-limits
 * - GitLab: 429 ("Retry later") with `Retry-After` and `RateLimit-*` headers:
 *   https://docs.gitlab.com/administration/settings/user_and_ip_rate_limits/
 * - GitHub, the only platform whose 403 can be a rate limit: 403 or 429 with `retry-after`
 *   (secondary limits), or with `x-ratelimit-remaining: 0` and `x-ratelimit-reset` (epoch
 *   seconds, primary limits), or with neither, a message that says so and "wait for at least
 *   one minute":
 *   https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
 * - A 5xx or 408 with `Retry-After` (maintenance, overload; RFC 9110 §10.2.3): the retry waits
 *   that long.
 *
 * Redirects are not followed: fetch would turn the POST into a GET (RFC 9110 §15.4.2-3), which
 * a platform answers with a list and a 200, so the message would be lost but recorded as sent.
 * A redirect is a permanent error that names where it points (an `http://` API URL that a
 * self-hosted GitLab or GitHub Enterprise redirects to `https://`).
 *
 * An answer is read up to a bound that every real answer fits in (see `_answer_body.ts`): a
 * longer 2xx is a retryable error, a longer error answer is described by its beginning.
 *
 * @module
 */

import { cutText, errorChainText, redact } from "../errors.ts";
import { asRecord } from "../subscriptions/templates.ts";
import { MAX_WAIT_SECONDS, parseRetryAfterSeconds } from "../worker/retry.ts";
import { TargetError } from "../errors.ts";
import { type BoundedText, readBoundedText } from "./bounded_body.ts";
import { answerLimitBytes } from "./_answer_body.ts";
import type { SendContext } from "./_target.ts";

/** Wait assumed when a platform answers 429 without saying how long, in seconds. */
const DEFAULT_RETRY_AFTER_SECONDS = 1;
/** GitHub asks for at least a minute after a rate limit that names no reset time. */
const GITHUB_RATE_LIMIT_SECONDS = 60;
/**
 * The platform name GitHub's requests carry: only GitHub documents a 403 that is a rate limit.
 * https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
 */
const GITHUB = "GitHub";
/** A platform answering 429 with a zero wait forever must not keep one delivery spinning. */
const MAX_RATE_LIMIT_RETRIES = 5;
/** A request with no answer after this long is abandoned (retryable). */
const REQUEST_TIMEOUT_MS = 30_000;
/** Platform error descriptions are cut here so a huge HTML error page cannot flood the log. */
const MAX_DETAIL_CHARS = 300;

/** A 2xx answer that still failed (Slack's `ok: false`), as read by the platform's module. */
export type Failure =
  | { kind: "rate_limited"; retryAfterSeconds?: number }
  | { kind: "retryable"; detail: string; retryAfterSeconds?: number }
  | { kind: "permanent"; detail: string };

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
    const failure = classify(status, headers, body, request);
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

function classify(
  status: number,
  headers: Headers,
  body: unknown,
  request: PostJsonRequest,
): Failure | undefined {
  if (status >= 200 && status < 300) return request.inspect?.(body);
  if (status >= 300 && status < 400) {
    const location = headers.get("location");
    return {
      kind: "permanent",
      detail: location === null
        ? "redirects are not followed"
        : `redirected to ${location}, which is not followed: set the API URL to where it points`,
    };
  }
  // GitHub answers a rate limit with either 429 or 403: a secondary limit sends retry-after; a
  // primary one, remaining 0 and the reset time. Other platforms send x-ratelimit-* headers on
  // most answers but limit with 429 only (Discord, GitLab's RateLimit-* and Retry-After), so
  // their 403 is a refusal even when the bucket it arrives with is empty: Discord's "Missing
  // Permissions" with x-ratelimit-remaining 0 was waited on and retried, never dead-lettered.
  if (status === 429 || (status === 403 && request.platform === GITHUB)) {
    const seconds = retryAfter(headers, body);
    if (seconds !== undefined) return { kind: "rate_limited", retryAfterSeconds: seconds };
    if (headers.get("x-ratelimit-remaining") === "0") {
      return {
        kind: "rate_limited",
        retryAfterSeconds: secondsUntilReset(headers) ?? GITHUB_RATE_LIMIT_SECONDS,
      };
    }
    // A secondary limit may name no wait at all: GitHub asks for at least a minute then, and
    // warns that retrying sooner can get the integration banned.
    if (request.platform === GITHUB && /\brate limit/i.test(describeError(body))) {
      return { kind: "rate_limited", retryAfterSeconds: GITHUB_RATE_LIMIT_SECONDS };
    }
    if (status === 429) return { kind: "rate_limited" };
  }
  const detail = describeError(body) || `HTTP ${status}`;
  if (status >= 500 || status === 408) {
    return { kind: "retryable", detail, retryAfterSeconds: retryAfter(headers, body) };
  }
  return { kind: "permanent", detail };
}

/**
 * The wait a platform asked for, in seconds: the body's `retry_after` (Discord, float) or
 * `parameters.retry_after` (Telegram), else the `Retry-After` header; at most
 * {@link MAX_WAIT_SECONDS}.
 */
export function retryAfter(headers: Headers, body: unknown): number | undefined {
  const record = asRecord(body);
  for (const candidate of [asRecord(record?.parameters)?.retry_after, record?.retry_after]) {
    if (typeof candidate === "number" && candidate >= 0) {
      return Math.min(candidate, MAX_WAIT_SECONDS);
    }
  }
  // Seconds or an HTTP date (RFC 9110 §10.2.3), parsed as the agent runner parses it.
  return parseRetryAfterSeconds(headers.get("retry-after"), Date.now());
}

/** Seconds until GitHub's `x-ratelimit-reset` (epoch seconds), or undefined when absent. */
function secondsUntilReset(headers: Headers): number | undefined {
  const reset = Number(headers.get("x-ratelimit-reset") ?? NaN);
  if (!Number.isFinite(reset) || reset <= 0) return undefined;
  return Math.min(Math.max(1, Math.ceil(reset - Date.now() / 1000)), MAX_WAIT_SECONDS);
}

/**
 * The platform's own words for an error (Telegram `description`, Slack `error`, ...), whole:
 * {@link postJson} removes the token, then cuts, so a cut never leaves part of a token behind.
 * Telegram's `parameters.migrate_to_chat_id` (a group upgraded to a supergroup has a new id,
 * https://core.telegram.org/bots/api#responseparameters) is added as what to do about it.
 *
 * @param body The answer: parsed JSON, or text that was not JSON.
 * @returns The description, or `""` when the answer has none.
 */
export function describeError(body: unknown): string {
  const record = asRecord(body);
  if (record === undefined) return typeof body === "string" ? body.trim() : "";
  const parts: string[] = [];
  for (const key of ["description", "message", "error", "error_description", "errors"]) {
    const value = record[key];
    if (value === undefined || value === null || value === "") continue;
    parts.push(typeof value === "string" ? value : JSON.stringify(value));
  }
  if (record.code !== undefined) parts.push(`code ${JSON.stringify(record.code)}`);
  const migratedTo = asRecord(record.parameters)?.migrate_to_chat_id;
  if (typeof migratedTo === "number") {
    parts.push(`the chat is now ${migratedTo}: use it as the chat id`);
  }
  return parts.join("; ");
}

/**
 * The failure for a 2xx answer that is not the platform's (a proxy's login page, a captive
 * portal): retryable, since the message was most likely not sent and whatever stands in
 * between is likely to step aside. It quotes what came back whole: {@link postJson} removes
 * the token from it, then cuts it (a page that echoes the request URL holds the token, and a
 * cut first could leave part of it where the removal no longer finds it).
 *
 * @param expected What the answer should have been: `a Bot API answer`, `a Discord message`.
 * @param body The answer: parsed JSON, or text that was not JSON.
 * @returns A retryable {@link Failure} reading `not <expected>: <the answer>`.
 */
export function notThePlatformsAnswer(expected: string, body: unknown): Failure {
  const text = typeof body === "string" ? body.trim() : JSON.stringify(body);
  return { kind: "retryable", detail: `not ${expected}: ${text === "" ? "an empty body" : text}` };
}

/**
 * An `inspect` for a platform that answers a created message with the message itself: an object
 * whose `id` is of `idType`. Anything else (a proxy's login page) means nothing was sent.
 * @param expected what the answer should be, for the error: `a Discord message`
 * @param idType the type of the created message's `id` in the platform's JSON
 * @returns the inspect function: undefined for the platform's answer, else
 *   {@link notThePlatformsAnswer}
 */
export function createdWithId(
  expected: string,
  idType: "string" | "number",
): (body: unknown) => Failure | undefined {
  return (body) => {
    const id = asRecord(body)?.id;
    const created = idType === "string" ? typeof id === "string" : typeof id === "number";
    return created ? undefined : notThePlatformsAnswer(expected, body);
  };
}
