/**
 * How a platform's answer is read: success, a wait (HTTP 429), or a retryable or permanent
 * failure described in the platform's own words, for `postJson` (`_http.ts`).
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
 * A redirect is a permanent failure that names where it points (an `http://` API URL that a
 * self-hosted GitLab or GitHub Enterprise redirects to `https://`).
 *
 * @module
 */

import { asRecord } from "../subscriptions/payload.ts";
import { MAX_WAIT_SECONDS, parseRetryAfterSeconds } from "../worker/retry.ts";

/** GitHub asks for at least a minute after a rate limit that names no reset time. */
const GITHUB_RATE_LIMIT_SECONDS = 60;
/**
 * The platform name GitHub's requests carry: only GitHub documents a 403 that is a rate limit.
 * https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
 */
const GITHUB = "GitHub";

/**
 * A failed answer: a wait (`rate_limited`, with the wait in seconds when the platform said),
 * or a `retryable` or `permanent` failure with the platform's description. A platform's
 * `inspect` returns one for a 2xx answer that still failed (Slack's `ok: false`).
 */
export type Failure =
  | { kind: "rate_limited"; retryAfterSeconds?: number }
  | { kind: "retryable"; detail: string; retryAfterSeconds?: number }
  | { kind: "permanent"; detail: string };

/**
 * Reads a platform's answer: success, a wait (429, or GitHub's 403 rate limit), or a retryable
 * or permanent failure with the platform's own words.
 * @param answer the answer's status, headers and body (parsed JSON, else text)
 * @param platform the platform's name (`GitHub` limits with 403 too) and its `inspect`, which
 *   reads a 2xx body
 * @returns undefined for success, else the failure
 */
export function classifyAnswer(
  { status, headers, body }: { status: number; headers: Headers; body: unknown },
  platform: { platform: string; inspect?: (body: unknown) => Failure | undefined },
): Failure | undefined {
  if (status >= 200 && status < 300) return platform.inspect?.(body);
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
  // their 403 is a refusal even when the bucket it arrives with is empty (Discord sends
  // "Missing Permissions" with x-ratelimit-remaining 0).
  if (status === 429 || (status === 403 && platform.platform === GITHUB)) {
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
    if (platform.platform === GITHUB && /\brate limit/i.test(describeError(body))) {
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
 * @param headers the answer's headers
 * @param body the answer: parsed JSON, or text that was not JSON
 * @returns the wait in seconds, or undefined when the platform named none
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
 * `postJson` removes the token, then cuts, so a cut never leaves part of a token behind.
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
 * between is likely to step aside. It quotes what came back whole: `postJson` removes
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
 * The id a platform gave a message, as text: a string as it is, a whole number in decimal.
 * @param value the answer's field (`result.message_id`, `id`, `ts`)
 * @returns the id, or undefined when the field is neither
 */
export function messageIdOf(value: unknown): string | undefined {
  if (typeof value === "string" && value !== "") return value;
  return typeof value === "number" && Number.isSafeInteger(value) ? String(value) : undefined;
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
