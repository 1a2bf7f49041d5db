import assert from "node:assert/strict";
import { createMemoryRateLimiter } from "../../../lib/subscriptions/rate_limit.ts";

const T0 = 1_700_000_000_000;

Deno.test("rate limiter allows a minute's worth at once, then refuses with the wait in seconds", () => {
  const limiter = createMemoryRateLimiter();
  for (let i = 0; i < 60; i++) assert.deepEqual(limiter.take("gh", 60, T0), { allowed: true });
  assert.deepEqual(limiter.take("gh", 60, T0), { allowed: false, retryAfterSeconds: 1 });
  assert.deepEqual(limiter.take("gh", 60, T0 + 1000), { allowed: true }, "one token a second");
});

Deno.test("rate limiter keeps one allowance per subscription", () => {
  const limiter = createMemoryRateLimiter();
  assert.equal(limiter.take("a", 1, T0).allowed, true);
  assert.equal(limiter.take("a", 1, T0).allowed, false);
  assert.equal(limiter.take("b", 1, T0).allowed, true);
});

Deno.test("rate limiter asks a 2-per-minute sender to wait 30 s", () => {
  const limiter = createMemoryRateLimiter();
  limiter.take("slow", 2, T0);
  limiter.take("slow", 2, T0);
  assert.deepEqual(limiter.take("slow", 2, T0), { allowed: false, retryAfterSeconds: 30 });
  assert.equal(limiter.take("slow", 2, T0 + 30_000).allowed, true);
});

Deno.test("rate limiter rounds a fractional wait up: a sender who waits Retry-After is let in", () => {
  const limiter = createMemoryRateLimiter();
  // 7 a minute: one token every 8.57 s.
  for (let i = 0; i < 7; i++) limiter.take("seven", 7, T0);
  assert.deepEqual(limiter.take("seven", 7, T0), { allowed: false, retryAfterSeconds: 9 });
  assert.equal(limiter.take("seven", 7, T0 + 8_000).allowed, false, "8 s is too early");
  assert.equal(limiter.take("seven", 7, T0 + 9_000).allowed, true);
});

Deno.test("rate limiter of one of two gateways allows half the limit, refilling at half the rate", () => {
  const limiter = createMemoryRateLimiter({ gateways: () => 2 });
  for (let i = 0; i < 30; i++) assert.deepEqual(limiter.take("gh", 60, T0), { allowed: true });
  assert.deepEqual(limiter.take("gh", 60, T0), { allowed: false, retryAfterSeconds: 2 });
  assert.equal(limiter.take("gh", 60, T0 + 1000).allowed, false, "one token every 2 s");
  assert.equal(limiter.take("gh", 60, T0 + 2000).allowed, true);
});

Deno.test("rate limiter's share follows the count of live gateways", () => {
  let live = 3;
  const limiter = createMemoryRateLimiter({ gateways: () => live });
  let allowed = 0;
  while (limiter.take("gh", 60, T0).allowed) allowed++;
  assert.equal(allowed, 20, "a third of 60");
  live = 1; // the two others died: their leases ended
  assert.equal(limiter.take("gh", 60, T0 + 1000).allowed, true, "one token a second again");
});

Deno.test("rate limiter lets one request through when a gateway's share is under one", () => {
  const limiter = createMemoryRateLimiter({ gateways: () => 4 });
  assert.equal(limiter.take("rare", 2, T0).allowed, true);
  // Half a request a minute per gateway: the next fits in two minutes.
  assert.deepEqual(limiter.take("rare", 2, T0), { allowed: false, retryAfterSeconds: 120 });
});
