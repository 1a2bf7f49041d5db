import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { decodeBase64 } from "../../../lib/signatures/mod.ts";

Deno.test("decodeBase64() agrees with Buffer on every length, padded and unpadded", () => {
  for (let length = 0; length <= 40; length++) {
    const data = new Uint8Array(length).map((_, i) => (i * 73 + length) & 0xff);
    const encoded = Buffer.from(data).toString("base64");
    assert.deepEqual(decodeBase64(encoded), data, encoded);
    assert.deepEqual(decodeBase64(encoded.replace(/=+$/, "")), data, encoded);
  }
});

Deno.test("decodeBase64() refuses whitespace, the URL-safe alphabet, bad padding and stray bits", () => {
  for (const bad of ["YW Jj", "YWJj\n", "a-_b", "a", "YQ=", "YQ===", "=YWJ", "YR==", "YWJ=Yw=="]) {
    assert.equal(decodeBase64(bad), null, JSON.stringify(bad));
  }
});
