/**
 * Per-subscription rate limiting (the "rate" step of docs/http.md). Each gateway counts in its
 * own memory; gateways sharing a PostgreSQL database each allow their share of the limit, the
 * limit divided by the gateways that take webhooks now (docs/scaling.md#rate-limits), so the
 * limit holds across them without a database write per request.
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
   * @param limitPerMinute requests per minute allowed for this key, across all gateways
   * @param nowMs the clock, in milliseconds
   * @returns allowed, or refused with the whole seconds to wait before one more fits
   */
  take(key: string, limitPerMinute: number, nowMs: number): RateDecision;
}

/** Options of {@link createMemoryRateLimiter}. */
export interface MemoryRateLimiterOptions {
  /**
   * How many gateways share the limit now, this one included: each allows `1 / gateways()` of
   * it. Read at each request, so it must answer at once (the store's `liveGateways`, counted
   * from heartbeats). @default {always 1}
   */
  gateways?: () => number;
}

/**
 * A token bucket per key: holds up to this gateway's share of `limitPerMinute` tokens (a burst
 * of one minute's worth, at least one token) and refills continuously at that share per minute.
 * Memory is one small entry per subscription that has received a request.
 * @param options see {@link MemoryRateLimiterOptions}
 * @returns the limiter
 * @example Two gateways sharing 60 requests per minute allow 30 each
 * ```ts
 * const limiter = createMemoryRateLimiter({ gateways: () => 2 });
 * limiter.take("github", 60, Date.now()); // { allowed: true }, 29 more this minute
 * ```
 */
export function createMemoryRateLimiter(options: MemoryRateLimiterOptions = {}): RateLimiter {
  const buckets = new Map<string, { tokens: number; updatedMs: number }>();
  const gateways = options.gateways ?? (() => 1);
  return {
    take(key, limitPerMinute, nowMs) {
      const share = limitPerMinute / Math.max(1, gateways());
      // A share under one token would refuse every request: a burst of one stays possible.
      const capacity = Math.max(1, share);
      const perMs = share / 60_000;
      const bucket = buckets.get(key) ?? { tokens: capacity, updatedMs: nowMs };
      const elapsed = Math.max(0, nowMs - bucket.updatedMs);
      bucket.tokens = Math.min(capacity, bucket.tokens + elapsed * perMs);
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
