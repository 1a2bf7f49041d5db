import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHmac } from "node:crypto";
import { HmacKey, hmacMatches, KeyCache, tokenMatches } from "../../../lib/signatures/_hmac.ts";
import { bytes, hmac } from "../../fakes/senders.ts";

Deno.test("HmacKey gives createHmac's digest for keys shorter than, equal to and longer than a block", () => {
  for (const keyLength of [1, 20, 63, 64, 65, 100, 200]) {
    const key = new Uint8Array(keyLength).map((_, i) => (i * 31 + keyLength) & 0xff);
    const hmacKey = new HmacKey(key);
    for (const dataLength of [0, 1, 55, 64, 2048]) {
      const data = new Uint8Array(dataLength).map((_, i) => (i * 7) & 0xff);
      const expected = createHmac("sha256", key).update(data).digest();
      assert.deepEqual(Buffer.from(hmacKey.digest(data)), expected, `${keyLength}/${dataLength}`);
      assert.deepEqual(Buffer.from(hmacKey.digest(data)), expected, "a second digest is the same");
    }
  }
});

Deno.test("KeyCache keeps at most maxEntries keys and drops the least recently used", async () => {
  const cache = new KeyCache(2);
  const a = cache.get("a", "utf8");
  cache.get("b", "utf8");
  assert.equal(cache.get("a", "utf8"), a);
  cache.get("c", "utf8");
  assert.equal(cache.size, 2);
  assert.equal(cache.get("a", "utf8"), a, "a was used last, so b was dropped");
  assert.notEqual(await cache.get("b", "utf8"), null);
  assert.equal(cache.size, 2);
});

Deno.test("KeyCache keeps one key per secret and derivation, and null for unusable secrets", async () => {
  const cache = new KeyCache();
  assert.notEqual(cache.get("whsec_AAAA", "utf8"), cache.get("whsec_AAAA", "standard"));
  assert.equal(await cache.get("", "utf8"), null);
  assert.equal(await cache.get("whsec_not base64!", "standard"), null);
  assert.equal(await cache.get("whsec_", "standard"), null);
  assert.equal(cache.size, 5);
});

Deno.test("hmacMatches() skips signatures that are not 32 bytes long", async () => {
  const cache = new KeyCache();
  const good = new Uint8Array(Buffer.from(hmac("k", "data", "hex"), "hex"));
  const base = { secrets: ["k"], material: "utf8" as const, data: bytes("data") };
  assert.equal(await hmacMatches(cache, { ...base, signatures: [good] }), true);
  assert.equal(await hmacMatches(cache, { ...base, signatures: [good.slice(0, 31)] }), false);
  assert.equal(await hmacMatches(cache, { ...base, signatures: [] }), false);
});

Deno.test("tokenMatches() accepts only the exact secret", async () => {
  const cache = new KeyCache();
  assert.equal(await tokenMatches(cache, ["old", "s3cret"], "s3cret"), true);
  for (const token of ["s3cre", "s3cret ", "S3cret", ""]) {
    assert.equal(await tokenMatches(cache, ["s3cret"], token), false, token);
  }
});
