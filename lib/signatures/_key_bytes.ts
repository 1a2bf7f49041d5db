/**
 * How a secret string becomes HMAC key bytes, shared by the signer in this folder and the
 * verifiers in `server/signatures/`, so that both derive the same key from the same secret.
 * Includes the strict base64 decoder that reads `whsec_` secrets (and, in the verifiers,
 * base64 signatures).
 *
 * @module
 */

/**
 * How a secret string becomes HMAC key bytes: `utf8` takes its UTF-8 bytes (every scheme but
 * Standard Webhooks); `standard` base64-decodes a `whsec_`-prefixed secret and takes any other
 * as UTF-8 (https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md).
 */
export type KeyMaterial = "utf8" | "standard";

const encoder = new TextEncoder();

/**
 * UTF-8 bytes of `text`.
 * @param text any string
 * @returns its UTF-8 bytes, in a fresh (never shared) `ArrayBuffer`
 */
export function utf8(text: string): Uint8Array<ArrayBuffer> {
  return encoder.encode(text);
}

const BASE64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/**
 * Decodes standard base64 (RFC 4648 §4), padded or not. Whitespace, the URL-safe alphabet and
 * non-zero trailing bits are refused with `null`: `atob` would accept some of them, and a
 * signature has exactly one spelling.
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
 * The HMAC key bytes of a secret (see {@link KeyMaterial}).
 * @param secret the subscription's secret, as written in its file or flag
 * @param material how the secret becomes key bytes
 * @returns the bytes, or null for a `whsec_` secret that is not base64 (standard material)
 */
export function keyBytes(secret: string, material: KeyMaterial): Uint8Array<ArrayBuffer> | null {
  if (material === "standard" && secret.startsWith("whsec_")) {
    return decodeBase64(secret.slice("whsec_".length));
  }
  return utf8(secret);
}
