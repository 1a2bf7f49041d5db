/**
 * WebCrypto plumbing shared by the schemes: strict hex and base64 decoding, a bounded cache of
 * imported HMAC keys, and the two constant-time checks (HMAC signature, plain token).
 *
 * Every comparison of secret-derived bytes goes through `crypto.subtle.verify`, which compares in
 * constant time; nothing here compares secrets with `===`.
 *
 * @module
 */

/** Bytes of an HMAC-SHA256 digest. */
const DIGEST_BYTES = 32;

/** Default number of imported keys a verifier keeps. @default {1024} */
export const DEFAULT_MAX_CACHED_KEYS = 1024;

/**
 * How a secret string becomes HMAC key bytes: `utf8` takes its UTF-8 bytes (every scheme but
 * Standard Webhooks); `standard` base64-decodes a `whsec_`-prefixed secret and takes any other
 * as UTF-8 (https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md).
 */
export type KeyMaterial = "utf8" | "standard";

const HMAC_SHA256 = { name: "HMAC", hash: "SHA-256" } as const;
const encoder = new TextEncoder();

/** UTF-8 bytes of `text`, typed for WebCrypto. */
export function utf8(text: string): Uint8Array<ArrayBuffer> {
  return encoder.encode(text);
}

/** The concatenation of `parts`, as one new buffer (for `ts.body` style signed content). */
export function concatBytes(...parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** `bytes` as a WebCrypto `BufferSource`, copying only when it views a shared buffer. */
export function asBufferSource(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return bytes.buffer instanceof ArrayBuffer
    ? bytes as Uint8Array<ArrayBuffer>
    : new Uint8Array(bytes);
}

/** Decodes hex (either case, even length); anything else gives `null`, never an exception. */
export function decodeHex(text: string): Uint8Array<ArrayBuffer> | null {
  if (text.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(text)) return null;
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) {
    out[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  }
  return out;
}

const BASE64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/**
 * Decodes standard base64 (RFC 4648 §4), padded or not. Whitespace, the URL-safe alphabet and
 * non-zero trailing bits are refused with `null`: `atob` would accept some of them, and a
 * signature has exactly one spelling.
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

function keyBytes(secret: string, material: KeyMaterial): Uint8Array<ArrayBuffer> | null {
  if (material === "standard" && secret.startsWith("whsec_")) {
    return decodeBase64(secret.slice("whsec_".length));
  }
  return utf8(secret);
}

/**
 * Imported HMAC-SHA256 keys, at most `maxEntries`, least recently used dropped first. One per
 * verifier (no module state); keyed by key material and secret, so schemes that derive the same
 * bytes share an entry. A secret that cannot be a key (empty, bad `whsec_` base64) caches `null`.
 */
export class KeyCache {
  readonly #entries = new Map<string, Promise<CryptoKey | null>>();
  readonly #maxEntries: number;

  /** @param maxEntries Keys kept before the least recently used is dropped. @default {1024} */
  constructor(maxEntries: number = DEFAULT_MAX_CACHED_KEYS) {
    this.#maxEntries = Math.max(1, Math.floor(maxEntries));
  }

  /** Number of cached keys. */
  get size(): number {
    return this.#entries.size;
  }

  /** The key for `secret` under `material`, imported on first use; `null` when it cannot be one. */
  get(secret: string, material: KeyMaterial): Promise<CryptoKey | null> {
    const id = `${material}\u0000${secret}`;
    const cached = this.#entries.get(id);
    if (cached) {
      this.#entries.delete(id);
      this.#entries.set(id, cached);
      return cached;
    }
    if (this.#entries.size >= this.#maxEntries) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
    const bytes = keyBytes(secret, material);
    const key = bytes === null || bytes.length === 0
      ? Promise.resolve(null)
      : crypto.subtle.importKey("raw", bytes, HMAC_SHA256, false, ["sign", "verify"])
        .catch(() => null);
    this.#entries.set(id, key);
    return key;
  }
}

/**
 * Whether any of `signatures` is the HMAC-SHA256 of `data` under any of `secrets`.
 *
 * @param keys The verifier's key cache.
 * @param candidates The secrets, the key material rule, the signed bytes and the decoded
 *   signatures (a signature that is not 32 bytes long never matches).
 * @returns True at the first match.
 */
export async function hmacMatches(
  keys: KeyCache,
  candidates: {
    secrets: readonly string[];
    material: KeyMaterial;
    data: Uint8Array;
    signatures: readonly Uint8Array<ArrayBuffer>[];
  },
): Promise<boolean> {
  const signatures = candidates.signatures.filter((sig) => sig.length === DIGEST_BYTES);
  if (signatures.length === 0) return false;
  const data = asBufferSource(candidates.data);
  for (const secret of candidates.secrets) {
    const key = await keys.get(secret, candidates.material);
    if (key === null) continue;
    for (const signature of signatures) {
      if (await crypto.subtle.verify("HMAC", key, signature, data)) return true;
    }
  }
  return false;
}

/**
 * Whether `token` equals any of `secrets`, in constant time: HMAC(secret, secret) is checked
 * against the token with `crypto.subtle.verify`, which compares the two digests, so neither the
 * content nor the length of the secret leaks through timing.
 */
export async function tokenMatches(
  keys: KeyCache,
  secrets: readonly string[],
  token: string,
): Promise<boolean> {
  const given = utf8(token);
  for (const secret of secrets) {
    const key = await keys.get(secret, "utf8");
    if (key === null) continue;
    const expected = await crypto.subtle.sign("HMAC", key, utf8(secret));
    if (await crypto.subtle.verify("HMAC", key, expected, given)) return true;
  }
  return false;
}
