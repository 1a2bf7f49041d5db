import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  decodeBase64,
  decodeHex,
  encodeBase64,
  encodeHex,
} from "../../../lib/signatures/_encoding.ts";

Deno.test("decodeHex() decodes either case and refuses odd lengths and non-hex characters", () => {
  assert.deepEqual(decodeHex("00ff7Fa0"), new Uint8Array([0x00, 0xff, 0x7f, 0xa0]));
  assert.deepEqual(decodeHex(""), new Uint8Array(0));
  for (const bad of ["0", "0g", "0x00", " 00", "00 ", "+1", "é0"]) {
    assert.equal(decodeHex(bad), null, bad);
  }
  const everyByte = Uint8Array.from({ length: 256 }, (_, i) => i);
  const hex = Buffer.from(everyByte).toString("hex");
  assert.deepEqual(decodeHex(hex), everyByte);
  assert.deepEqual(decodeHex(hex.toUpperCase()), everyByte);
});

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

Deno.test("encodeHex() and encodeBase64() agree with Buffer, also on a view into a larger buffer", () => {
  const whole = Uint8Array.from({ length: 40 }, (_, i) => (i * 53) & 0xff);
  for (const data of [whole, whole.subarray(0, 0), whole.subarray(3, 20)]) {
    assert.equal(encodeHex(data), Buffer.from(data).toString("hex"));
    assert.equal(encodeBase64(data), Buffer.from(data).toString("base64"));
    assert.deepEqual(decodeHex(encodeHex(data)), data);
    assert.deepEqual(decodeBase64(encodeBase64(data)), data);
  }
});
