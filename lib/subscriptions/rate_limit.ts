/**
 * Per-subscription rate limiting (the "rate" step of docs/http.md). In memory for one process,
 * behind the {@link RateLimiter} interface so a shared store (Redis, SQL) can implement it later.
 *
 * @module
 */

/** The answer of a rate limiter for one request. */
export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** Decides whether one more request for a key fits its limit. */
export interface RateLimiter {
  /**
   * Takes one request's worth from `key`'s allowance.
   * @param key the subscription name
   * @param limitPerMinute requests per minute allowed for this key
   * @param nowMs the clock, in milliseconds
   * @returns allowed, or refused with the whole seconds to wait before one more fits
   */
  take(key: string, limitPerMinute: number, nowMs: number): RateDecision;
}

/**
 * A token bucket per key: holds up to `limitPerMinute` tokens (a burst of one minute's worth)
 * and refills continuously at `limitPerMinute / 60` tokens per second. Memory is one small
 * entry per subscription that has received a request.
 */
export function createMemoryRateLimiter(): RateLimiter {
  const buckets = new Map<string, { tokens: number; updatedMs: number }>();
  return {
    take(key, limitPerMinute, nowMs) {
      const perMs = limitPerMinute / 60_000;
      const bucket = buckets.get(key) ?? { tokens: limitPerMinute, updatedMs: nowMs };
      const elapsed = Math.max(0, nowMs - bucket.updatedMs);
      bucket.tokens = Math.min(limitPerMinute, bucket.tokens + elapsed * perMs);
      bucket.updatedMs = nowMs;
      buckets.set(key, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return { allowed: true };
      }
      return {
        allowed: false,
        retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000)),
      };
    },
  };
}
