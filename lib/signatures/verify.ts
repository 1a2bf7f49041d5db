/**
 * Signature verification for incoming webhooks (CONTRACT §5): nine schemes, tried in a fixed
 * order ({@link SCHEME_NAMES}), each checked on the raw body bytes before anything parses them.
 * HMACs are computed with `node:crypto` by a hand-written HMAC-SHA256 that keeps each secret's
 * padded-key hash states (`_crypto.ts`: measured faster than `crypto.subtle.verify` and than
 * `createHmac`), and compared with `timingSafeEqual`.
 *
 * ```ts
 * const verifier = createSignatureVerifier();
 * const result = await verifier.verify({
 *   headers: request.headers,
 *   body: new Uint8Array(await request.arrayBuffer()),
 *   secrets: [subscription.secret],
 *   nowSeconds: Math.floor(Date.now() / 1000),
 * });
 * if (!result.ok) return c.json({ error: `signature ${result.reason}` }, 401);
 * ```
 *
 * @module
 */

import { SCHEME_NAMES, type SchemeName } from "./mod.ts";
import { bearer, gitlab } from "./_token.ts";
import { github, linear, shopify } from "./_body_hmac.ts";
import { DEFAULT_MAX_CACHED_KEYS, KeyCache } from "./_crypto.ts";
import { standard } from "./_standard.ts";
import { stripe } from "./_stripe.ts";
import { generic, slack } from "./_timestamped.ts";
import type { Scheme, SchemeOutcome, VerifyRequest, VerifyResult } from "./_types.ts";

export type { SchemeName } from "./mod.ts";
export type { VerifyRequest, VerifyResult } from "./_types.ts";
export { MAX_HEADER_CHARS, MAX_SIGNATURES } from "./_headers.ts";

/** Each scheme by its name: the type requires one for every {@link SchemeName}. */
const SCHEME_BY_NAME: Readonly<Record<SchemeName, Scheme>> = {
  github,
  gitlab,
  standard,
  stripe,
  slack,
  shopify,
  linear,
  generic,
  bearer,
};

/** The schemes in CONTRACT §5 table order: the first whose header is present decides. */
const SCHEMES: readonly Scheme[] = SCHEME_NAMES.map((name) => SCHEME_BY_NAME[name]);

/** Default replay window: a signed timestamp may differ from the clock by this much. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** Checks the authentication of incoming webhook requests. */
export interface SignatureVerifier {
  /**
   * Authenticates one request against its route's secrets.
   *
   * @param request Headers, raw body, candidate secrets, clock and optional pinned scheme.
   * @returns `ok` with the scheme, or the reason it failed; never throws on any header value.
   */
  verify(request: VerifyRequest): Promise<VerifyResult>;
}

function findScheme(headers: Headers, schemes: readonly Scheme[]): Scheme | undefined {
  return schemes.find((scheme) => scheme.headers.some((name) => headers.has(name)));
}

/**
 * The scheme named by a request's headers: the first of CONTRACT §5's table whose header is
 * present, whether or not its value is well-formed. For diagnostics: it tells which scheme a
 * request commits to without verifying anything.
 *
 * @param headers The request headers.
 * @returns The scheme name, or `null` when no known header is present.
 */
export function detectScheme(headers: Headers): SchemeName | null {
  return findScheme(headers, SCHEMES)?.name ?? null;
}

/**
 * Makes a verifier. Create one per gateway: it caches the prepared HMAC key of each secret
 * (per secret and key derivation) in a bounded map, least recently used dropped first.
 *
 * A header that is present commits the request to its scheme: a wrong `X-Hub-Signature-256`
 * next to a right `Authorization: Bearer` is `invalid`, never a fallback. With `only` set, the
 * other schemes' headers are ignored, so a request without the pinned header is `missing` and
 * the result names the pinned scheme. Empty secrets, and `whsec_` secrets that are not base64
 * for Standard Webhooks, match nothing.
 *
 * @param options `toleranceSeconds`: replay window in seconds, either direction
 *   (@default {300}); `maxCachedKeys`: prepared keys kept (@default {1024}).
 * @returns A {@link SignatureVerifier}.
 * @throws {RangeError} When `toleranceSeconds` is negative or not finite, or `maxCachedKeys`
 *   is below 1.
 */
export function createSignatureVerifier(
  options: { toleranceSeconds?: number; maxCachedKeys?: number } = {},
): SignatureVerifier {
  const toleranceSeconds = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const maxCachedKeys = options.maxCachedKeys ?? DEFAULT_MAX_CACHED_KEYS;
  if (!Number.isFinite(toleranceSeconds) || toleranceSeconds < 0) {
    throw new RangeError(
      `Cannot verify signatures: toleranceSeconds must be >= 0, got ${toleranceSeconds}`,
    );
  }
  if (!(maxCachedKeys >= 1)) {
    throw new RangeError(
      `Cannot cache signature keys: maxCachedKeys must be >= 1, got ${maxCachedKeys}`,
    );
  }
  const keys = new KeyCache(maxCachedKeys);
  return {
    async verify(request: VerifyRequest): Promise<VerifyResult> {
      const candidates = request.only === undefined
        ? SCHEMES
        : SCHEMES.filter((scheme) => scheme.name === request.only);
      const scheme = findScheme(request.headers, candidates);
      if (scheme === undefined) {
        return { ok: false, scheme: request.only ?? null, reason: "missing" };
      }
      let outcome: SchemeOutcome;
      try {
        outcome = await scheme.check({ ...request, toleranceSeconds, keys });
      } catch {
        // A parser bug must cost the sender a 401, not the gateway a 500.
        outcome = "invalid";
      }
      return outcome === "ok"
        ? { ok: true, scheme: scheme.name }
        : { ok: false, scheme: scheme.name, reason: outcome };
    },
  };
}
