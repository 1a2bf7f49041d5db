/**
 * Retry arithmetic shared by the worker, the agent runners and the targets: the retry policy and
 * its defaults, exponential backoff with jitter, and the HTTP `Retry-After` header.
 *
 * @module
 */

/**
 * The longest wait honoured, in seconds (one week): a `Retry-After` of 10^26 seconds would
 * otherwise park an event for ever, past every retry limit. Also the largest backoff delay the
 * configuration accepts.
 */
export const MAX_WAIT_SECONDS = 604_800;

/**
 * How failed agent runs and deliveries are retried (docs/durability.md): how many attempts, and how the
 * delay between two of them grows. `config.yaml` sets it (`agent.retry`); the worker uses it.
 */
export interface RetryPolicy {
  /** Attempts per event before it is dead-lettered. @default {5} */
  maxAttempts: number;
  /**
   * Backoff after the first failure (the delay before the second attempt), in milliseconds;
   * doubles each attempt. @default {10_000}
   */
  initialDelayMs: number;
  /**
   * Longest backoff, the upper bound of the computed delay, in milliseconds (a `Retry-After`
   * may ask for more). @default {3_600_000}
   */
  maxDelayMs: number;
}

/**
 * The retry policy when `config.yaml` (or the worker's caller) sets none: 5 attempts, 10 s
 * after the first failure, at most 1 h between two attempts.
 */
export const DEFAULT_RETRY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 5,
  initialDelayMs: 10_000,
  maxDelayMs: 3_600_000,
});

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
  options: Pick<RetryPolicy, "initialDelayMs" | "maxDelayMs"> & {
    random: () => number;
    retryAfterSeconds?: number;
  },
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
