/**
 * Retry arithmetic shared by the worker, the agent runners and the targets: exponential backoff
 * with jitter, and the HTTP `Retry-After` header.
 *
 * @module
 */

/**
 * The longest wait honoured, in seconds (one week): a `Retry-After` of 10^26 seconds would
 * otherwise park an event for ever, past every retry limit. Also the largest backoff delay the
 * configuration accepts.
 */
export const MAX_WAIT_SECONDS = 604_800;

/** How the delay between two attempts grows. */
export interface BackoffOptions {
  /** Delay before the second attempt, in milliseconds. @default {10_000} */
  initialDelayMs: number;
  /** Upper bound of the computed delay, in milliseconds. @default {3_600_000} */
  maxDelayMs: number;
}

/**
 * Computes the delay before the next attempt: `min(maxDelayMs, initialDelayMs * 2^(attempt-1))`
 * with equal jitter (half fixed, half random, so retries of many events spread out but never
 * collapse to zero), and never less than what the other side asked for (up to
 * {@link MAX_WAIT_SECONDS}).
 * @param attempt the number of the attempt that just failed, from 1
 * @param options the backoff curve, plus `random` (a value in [0, 1)) and the optional
 *   `retryAfterSeconds` the endpoint or platform sent
 * @returns the delay in milliseconds, an integer
 */
export function retryDelayMs(
  attempt: number,
  options: BackoffOptions & { random: () => number; retryAfterSeconds?: number },
): number {
  const exponent = Math.max(0, attempt - 1);
  const base = Math.min(options.maxDelayMs, options.initialDelayMs * 2 ** exponent);
  const jittered = base / 2 + options.random() * (base / 2);
  const floor = Math.min(options.retryAfterSeconds ?? 0, MAX_WAIT_SECONDS) * 1000;
  return Math.ceil(Math.max(jittered, floor));
}

/**
 * Reads an HTTP `Retry-After` value: delay-seconds or an HTTP-date
 * (RFC 9110 §10.2.3, https://www.rfc-editor.org/rfc/rfc9110#field.retry-after).
 * @param value the header value, or null when absent
 * @param nowMs the current time in milliseconds since the epoch, for the HTTP-date form
 * @returns seconds to wait (0 to {@link MAX_WAIT_SECONDS}), or undefined when absent or
 *   unreadable
 */
export function parseRetryAfterSeconds(
  value: string | null | undefined,
  nowMs: number,
): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.min(Number(text), MAX_WAIT_SECONDS);
  const dateMs = Date.parse(text);
  if (Number.isNaN(dateMs)) return undefined;
  return Math.min(Math.max(0, Math.ceil((dateMs - nowMs) / 1000)), MAX_WAIT_SECONDS);
}
