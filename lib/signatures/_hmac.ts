/**
 * The HMAC-SHA256 plumbing every scheme shares, on both sides: how a secret becomes key bytes,
 * prepared keys and their bounded cache, the constant-time checks (HMAC signature, plain token)
 * and the signing of text. Signer and verifier derive their keys here, so both take the same key
 * from the same secret.
 *
 * HMACs are computed with `node:crypto` hashes, not WebCrypto: {@link HmacKey} keeps each key's
 * two padded-key hash states, so a digest hashes only the data. That is cheaper than
 * `crypto.subtle.verify`, an asynchronous round trip to another thread for a few microseconds of
 * work, and than `createHmac`, which pads and hashes the key again on every call.
 *
 * Every comparison of secret-derived bytes goes through `node:crypto` `timingSafeEqual` on
 * equal-length digests; nothing here compares secrets with `===`.
 *
 * @module
 */
import { createHash, type Hash, timingSafeEqual } from "node:crypto";
import { decodeBase64, utf8 } from "./_encoding.ts";

/** Bytes of an HMAC-SHA256 digest. */
const DIGEST_BYTES = 32;

/** SHA-256's block size in bytes: HMAC pads (or first hashes) its key to this length. */
const BLOCK_BYTES = 64;

/** Default number of prepared HMAC keys a verifier keeps. @default {1024} */
export const DEFAULT_MAX_CACHED_KEYS = 1024;

/**
 * How a secret string becomes HMAC key bytes: `utf8` takes its UTF-8 bytes (every scheme but
 * Standard Webhooks); `standard` base64-decodes a `whsec_`-prefixed secret and takes any other
 * as UTF-8 (https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md).
 */
export type KeyMaterial = "utf8" | "standard";

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

/**
 * An HMAC-SHA256 key with its two padded-key blocks already hashed (RFC 2104 §2), so each
 * digest costs two hash-state copies and the hashing of the data, where `createHmac` re-derives
 * the key, pads it and hashes both blocks again on every call.
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
 * The prepared key of `secret`, or null when the secret gives no key bytes (empty, or a
 * `whsec_` secret that is not base64 for Standard Webhooks): such a secret signs and matches
 * nothing.
 */
function hmacKeyOf(secret: string, material: KeyMaterial): HmacKey | null {
  const bytes = keyBytes(secret, material);
  return bytes === null || bytes.length === 0 ? null : new HmacKey(bytes);
}

/**
 * HMAC-SHA256 of the UTF-8 bytes of `text` under `secret`, for signing a request.
 * @param secret the subscription's secret
 * @param material how the secret becomes key bytes
 * @param text the signed content (`<timestamp>.<body>` and the like)
 * @returns the 32-byte digest, or null when the secret gives no key (see {@link hmacKeyOf})
 */
export function hmacOf(secret: string, material: KeyMaterial, text: string): Uint8Array | null {
  return hmacKeyOf(secret, material)?.digest(utf8(text)) ?? null;
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
    const key = hmacKeyOf(secret, material);
    this.#entries.set(id, key);
    return key;
  }
}

/**
 * True when one of `signatures` is the HMAC-SHA256 of `data` under one of `secrets`.
 * Signatures of the wrong length are skipped; equal-length ones are compared with
 * `timingSafeEqual`, so the time taken does not depend on how many bytes match. Synchronous
 * `node:crypto` hashing, rather than `crypto.subtle.verify`, spares each request a round trip
 * to another thread.
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
