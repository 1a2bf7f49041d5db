import assert from "node:assert/strict";
import { parseRetryAfterSeconds, retryDelayMs } from "../../../lib/worker/retry.ts";

const curve = { initialDelayMs: 10_000, maxDelayMs: 3_600_000 };

Deno.test("retryDelayMs() doubles per attempt with equal jitter, capped at maxDelayMs", () => {
  assert.equal(retryDelayMs(1, { ...curve, random: () => 0 }), 5_000);
  assert.equal(retryDelayMs(1, { ...curve, random: () => 0.999999 }), 10_000);
  assert.equal(retryDelayMs(3, { ...curve, random: () => 0.5 }), 30_000);
  assert.equal(retryDelayMs(20, { ...curve, random: () => 1 }), 3_600_000);
});

Deno.test("retryDelayMs() never goes below the Retry-After asked for", () => {
  assert.equal(retryDelayMs(1, { ...curve, random: () => 0, retryAfterSeconds: 90 }), 90_000);
  assert.equal(retryDelayMs(1, { ...curve, random: () => 0, retryAfterSeconds: 1 }), 5_000);
});

Deno.test("parseRetryAfterSeconds() reads delay-seconds and HTTP-dates", () => {
  const now = Date.parse("Wed, 21 Oct 2015 07:28:00 GMT");
  assert.equal(parseRetryAfterSeconds("120", now), 120);
  assert.equal(parseRetryAfterSeconds(" 1.5 ", now), 1.5);
  assert.equal(parseRetryAfterSeconds("Wed, 21 Oct 2015 07:29:00 GMT", now), 60);
  assert.equal(parseRetryAfterSeconds("Wed, 21 Oct 2015 07:00:00 GMT", now), 0);
  assert.equal(parseRetryAfterSeconds("soon", now), undefined);
  assert.equal(parseRetryAfterSeconds(null, now), undefined);
});
