/**
 * Signature verification throughput on a 2 KB body: GitHub with the verifier's cached key, the
 * same with a key prepared on every request (the baseline the cache saves), and rejected
 * requests, to show that a forged or malformed signature costs no more than a valid one.
 *
 * Cases are interleaved over several rounds and the median rate is printed, so that a burst of
 * load from other processes on a small machine skews one round, not one case.
 *
 * Run: `deno run bench/signatures.ts` (about 8 s; no permissions needed).
 *
 * @module
 */

import { createSignatureVerifier, signRequest, type VerifyRequest } from "../lib/signatures/mod.ts";
import { median } from "./_median.ts";

/** Wall-clock time spent on each case in each round, in milliseconds. */
const CASE_MILLISECONDS = 300;
/** Rounds over all cases; the median of each case's rates is reported. */
const ROUNDS = 5;
/** Unmeasured calls before each case, so that JIT and key preparation are out of the numbers. */
const WARMUP_CALLS = 200;

const SECRET = "bench-secret-0123456789abcdefghijklmnopqrstuvwx";
const encoder = new TextEncoder();
const decoder = new TextDecoder();

function makeBody(bytes: number): Uint8Array<ArrayBuffer> {
  const item = JSON.stringify({ id: 123456, message: "fix: handle empty payloads", ok: true });
  let text = `{"commits":[${item}`;
  while (text.length + item.length + 3 <= bytes) text += `,${item}`;
  return encoder.encode(`${text}]}`.padEnd(bytes, " "));
}

/** Calls `run` for {@link CASE_MILLISECONDS} and returns calls per second. */
async function measure(run: () => Promise<boolean>): Promise<number> {
  for (let i = 0; i < WARMUP_CALLS; i++) await run();
  let calls = 0;
  const started = performance.now();
  let elapsed = 0;
  while (elapsed < CASE_MILLISECONDS) {
    for (let i = 0; i < 100; i++) {
      if (!await run()) throw new Error("benchmark case returned an unexpected result");
    }
    calls += 100;
    elapsed = performance.now() - started;
  }
  return calls / (elapsed / 1000);
}

async function main(): Promise<void> {
  const body = makeBody(2048);
  const nowSeconds = Math.floor(Date.now() / 1000);
  const valid = signRequest("github", SECRET, decoder.decode(body), {
    deliveryId: "bench",
    nowSeconds,
  })!["x-hub-signature-256"];
  const request = (signature: string): VerifyRequest => ({
    headers: new Headers({ "X-Hub-Signature-256": signature }),
    body,
    secrets: [SECRET],
    nowSeconds,
  });
  const validRequest = request(valid);
  const forgedRequest = request(`sha256=${"0".repeat(64)}`);
  const malformedRequest = request("sha256=not-hex");
  const hugeRequest = request("a".repeat(64 * 1024));
  const cached = createSignatureVerifier();

  const cases: [string, () => Promise<boolean>][] = [
    ["github valid, cached key", async () => (await cached.verify(validRequest)).ok],
    [
      "github valid, key imported per request",
      async () => (await createSignatureVerifier().verify(validRequest)).ok,
    ],
    ["github forged signature (rejected)", async () => !(await cached.verify(forgedRequest)).ok],
    ["github malformed header (rejected)", async () => !(await cached.verify(malformedRequest)).ok],
    ["64 KB header (rejected)", async () => !(await cached.verify(hugeRequest)).ok],
  ];

  console.log(
    `Signature verification, ${body.length}-byte body, median of ${ROUNDS} x ${CASE_MILLISECONDS} ms`,
  );
  const rates: number[][] = cases.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, [, run]] of cases.entries()) rates[index].push(await measure(run));
  }
  const medians = rates.map(median);
  for (const [index, [name]] of cases.entries()) {
    const rate = Math.round(medians[index]).toLocaleString("en-US");
    console.log(`${name.padEnd(42)} ${rate.padStart(10)} ops/s`);
  }
  console.log(`key cache speed-up: ${(medians[0] / medians[1]).toFixed(1)}x`);
}

if (import.meta.main) await main();
