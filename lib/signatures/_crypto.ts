/**
 * HMAC plumbing shared by the schemes: strict hex decoding, a bounded cache of prepared HMAC
 * keys, and the two constant-time checks (HMAC signature, plain token). How a secret becomes key
 * bytes, and base64 decoding, come from `lib/signatures/`, which the signer shares.
 *
 * HMACs are computed with `node:crypto` hashes, not WebCrypto: {@link HmacKey} is a hand-written
 * HMAC-SHA256 (RFC 2104) that keeps each key's two padded-key hash states, so a digest hashes
 * only the data. It measured faster than both `crypto.subtle.verify` and `createHmac` (figures at
 * {@link hmacMatches}; README, "What was tried, and helped").
 *
 * Every comparison of secret-derived bytes goes through `node:crypto` `timingSafeEqual` on
 * equal-length digests; nothing here compares secrets with `===`.
 *
 * @module
 */
import { createHash, type Hash, timingSafeEqual } from "node:crypto";
import { keyBytes, type KeyMaterial, utf8 } from "./mod.ts";

/** Bytes of an HMAC-SHA256 digest. */
const DIGEST_BYTES = 32;

/** Default number of prepared HMAC keys a verifier keeps. @default {1024} */
export const DEFAULT_MAX_CACHED_KEYS = 1024;

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

/** The value of each hex digit by character code, -1 for every other character below 128. */
const HEX_VALUES = Int8Array.from(
  { length: 128 },
  (_, code) => "0123456789abcdef".indexOf(String.fromCharCode(code).toLowerCase()),
);

/**
 * Decodes hex (either case, even length); anything else gives `null`, never an exception.
 * One table lookup per digit: this runs on every signed request.
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

/** SHA-256's block size in bytes: HMAC pads (or first hashes) its key to this length. */
const BLOCK_BYTES = 64;

/**
 * An HMAC-SHA256 key with its two padded-key blocks already hashed (RFC 2104 §2), so each
 * digest costs two hash-state copies and the hashing of the data, where `createHmac` re-derives
 * the key, pads it and hashes both blocks again on every call. On the 2-core machine, for a
 * 2 KB body: about 6–8 µs a digest, against 10–11 µs for `createHmac`.
 *
 * Source: RFC 2104, "HMAC: Keyed-Hashing for Message Authentication" (https://www.rfc-editor.org/rfc/rfc2104);
 * SHA-256 per FIPS 180-4. The tests check it against `node:crypto` `createHmac`.
 */
export class HmacKey {
  readonly #inner: Hash;
  readonly #outer: Hash;

  /** @param key the key bytes, any length (longer than 64 bytes are hashed first, per RFC 2104) */
  constructor(key: Uint8Array) {
    const block = new Uint8Array(BLOCK_BYTES);
    block.set(key.length > BLOCK_BYTES ? createHash("sha256").update(key).digest() : key);
    this.#inner = createHash("sha256").update(block.map((byte) => byte ^ 0x36));
    this.#outer = createHash("sha256").update(block.map((byte) => byte ^ 0x5c));
  }

  /**
   * HMAC-SHA256 of `data`.
   * @param data the message bytes
   * @returns the 32-byte digest
   */
  digest(data: Uint8Array): Uint8Array {
    const inner = this.#inner.copy().update(data).digest();
    return this.#outer.copy().update(inner).digest();
  }
}

/**
 * A bounded least-recently-used cache of HMAC keys, keyed by (key material, secret), so each
 * secret's key is prepared once ({@link HmacKey}).
 */
export class KeyCache {
  readonly #entries = new Map<string, HmacKey | null>();
  readonly #maxEntries: number;

  /** @param maxEntries how many keys to keep @default {1024} */
  constructor(maxEntries: number = DEFAULT_MAX_CACHED_KEYS) {
    this.#maxEntries = Math.max(1, Math.floor(maxEntries));
  }

  /** Number of keys held. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * The key for `secret`, or null when the secret gives no key bytes (empty, or a `whsec_`
   * secret that is not base64).
   */
  get(secret: string, material: KeyMaterial): HmacKey | null {
    const id = `${material}\u0000${secret}`;
    const cached = this.#entries.get(id);
    if (cached !== undefined) {
      this.#entries.delete(id);
      this.#entries.set(id, cached);
      return cached;
    }
    if (this.#entries.size >= this.#maxEntries) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
    const bytes = keyBytes(secret, material);
    const key = bytes === null || bytes.length === 0 ? null : new HmacKey(bytes);
    this.#entries.set(id, key);
    return key;
  }
}

/**
 * True when one of `signatures` is the HMAC-SHA256 of `data` under one of `secrets`.
 * Signatures of the wrong length are skipped; equal-length ones are compared with
 * `timingSafeEqual`, so the time taken does not depend on how many bytes match.
 *
 * Why `node:crypto` hashes and not `crypto.subtle.verify`: measured on the 2-core machine with a
 * 2 KB body, one call in isolation costs about 45 µs with `crypto.subtle.verify` (an async round
 * trip to another thread) and about 10 µs with `createHmac`, 6–8 µs with {@link HmacKey}.
 */
export function hmacMatches(
  keys: KeyCache,
  candidates: {
    secrets: readonly string[];
    material: KeyMaterial;
    data: Uint8Array;
    signatures: readonly Uint8Array[];
  },
): Promise<boolean> {
  const signatures = candidates.signatures.filter((sig) => sig.length === DIGEST_BYTES);
  if (signatures.length === 0) return Promise.resolve(false);
  for (const secret of candidates.secrets) {
    const key = keys.get(secret, candidates.material);
    if (key === null) continue;
    const expected = key.digest(candidates.data);
    for (const signature of signatures) {
      if (timingSafeEqual(expected, signature)) return Promise.resolve(true);
    }
  }
  return Promise.resolve(false);
}

/**
 * True when `token` equals one of `secrets`, compared in constant time: both sides are
 * HMAC-ed with the secret's key first, so the comparison is over equal-length digests.
 */
export function tokenMatches(
  keys: KeyCache,
  secrets: readonly string[],
  token: string,
): Promise<boolean> {
  const given = utf8(token);
  for (const secret of secrets) {
    const key = keys.get(secret, "utf8");
    if (key === null) continue;
    const expected = key.digest(utf8(secret));
    const actual = key.digest(given);
    if (timingSafeEqual(expected, actual)) return Promise.resolve(true);
  }
  return Promise.resolve(false);
}
