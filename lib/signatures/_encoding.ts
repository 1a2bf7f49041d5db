/**
 * The byte encodings signatures travel in: UTF-8 for signed text, strict hex and base64 for
 * the signatures themselves. Decoders return `null` on anything malformed and never throw,
 * since they read headers from unauthenticated requests.
 *
 * @module
 */

import { Buffer } from "node:buffer";

const encoder = new TextEncoder();

/**
 * UTF-8 bytes of `text`.
 * @param text any string
 * @returns its UTF-8 bytes, in a fresh (never shared) `ArrayBuffer`
 */
export function utf8(text: string): Uint8Array<ArrayBuffer> {
  return encoder.encode(text);
}

/**
 * The concatenation of `parts`, as one new buffer (for `ts.body` style signed content).
 * @param parts the byte arrays, in order
 * @returns a fresh buffer holding each part after the other
 */
export function concatBytes(...parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** The value of each hex digit by character code, -1 for every other character below 128. */
const HEX_VALUES = Int8Array.from(
  { length: 128 },
  (_, code) => "0123456789abcdef".indexOf(String.fromCharCode(code).toLowerCase()),
);

/**
 * Decodes hex (either case, even length). One table lookup per digit, as this runs on every
 * signed request.
 * @param text the hex text
 * @returns the decoded bytes, or `null` when `text` is not hex (never throws)
 */
export function decodeHex(text: string): Uint8Array<ArrayBuffer> | null {
  if (text.length % 2 !== 0) return null;
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) {
    const high = HEX_VALUES[text.charCodeAt(2 * i)] ?? -1;
    const low = HEX_VALUES[text.charCodeAt(2 * i + 1)] ?? -1;
    if (high < 0 || low < 0) return null;
    out[i] = (high << 4) | low;
  }
  return out;
}

const BASE64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/**
 * Decodes standard base64 (RFC 4648 §4), padded or not. Whitespace, the URL-safe alphabet and
 * non-zero trailing bits are refused: `atob` would accept some of them, and a signature has
 * exactly one spelling.
 * @param text the base64 text
 * @returns the decoded bytes, or `null` when `text` is not strict base64 (never throws)
 */
export function decodeBase64(text: string): Uint8Array<ArrayBuffer> | null {
  const unpadded = text.endsWith("==") ? text.slice(0, -2) : text.replace(/=$/, "");
  if (unpadded.length % 4 === 1 || (unpadded !== text && text.length % 4 !== 0)) return null;
  const out = new Uint8Array(Math.floor((unpadded.length * 3) / 4));
  let bits = 0;
  let value = 0;
  let index = 0;
  for (const char of unpadded) {
    const digit = BASE64_ALPHABET.indexOf(char);
    if (digit < 0) return null;
    value = ((value << 6) | digit) & 0xffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[index++] = (value >> bits) & 0xff;
    }
  }
  return (value & ((1 << bits) - 1)) === 0 ? out : null;
}

/**
 * Lower-case hex of `bytes`, as the hex schemes send a signature.
 * @param bytes any bytes
 * @returns two digits a byte
 */
export function encodeHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

/**
 * Padded standard base64 (RFC 4648 §4) of `bytes`, as the base64 schemes send a signature.
 * @param bytes any bytes
 * @returns the base64 text, with `=` padding
 */
export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}
