/**
 * The webhook authentication schemes (docs/signatures.md), both sides of each: the gateway
 * verifies incoming requests with {@link createSignatureVerifier}, and `agent webhook test`
 * signs requests as each scheme's senders do with {@link signRequest}. Nine schemes, in five
 * families (one private file each): body HMACs (GitHub, Shopify, Linear), timestamped HMACs
 * (Slack, Generic), Standard Webhooks / Svix, Stripe, and plain tokens (GitLab, Bearer).
 *
 * Verification runs on the raw body bytes, before anything parses them; HMACs are compared in
 * constant time, and each secret's HMAC key is prepared once and cached.
 *
 * @example Verify a request in a handler
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
 * @example Sign a test request for a subscription pinned to a scheme
 * ```ts
 * if (!isSchemeName(flag)) {
 *   throw new UsageError(`--auth must be one of: ${SCHEME_NAMES.join(", ")}`);
 * }
 * const options = { deliveryId: "t-1", nowSeconds: 1_700_000_000 };
 * const headers = signRequest(flag, secret, body, options); // null when the secret gives no key
 * ```
 *
 * @module
 */

import { github, linear, shopify } from "./_body_hmac.ts";
import { DEFAULT_MAX_CACHED_KEYS, KeyCache } from "./_hmac.ts";
import { standard } from "./_standard.ts";
import { stripe } from "./_stripe.ts";
import { generic, slack } from "./_timestamped.ts";
import { bearer, gitlab } from "./_token.ts";
import type { Scheme, SchemeOutcome, VerifyRequest, VerifyResult } from "./_types.ts";

export type { VerifyRequest, VerifyResult } from "./_types.ts";
export { MAX_HEADER_CHARS, MAX_SIGNATURES } from "./_headers.ts";

/** The signature schemes of docs/signatures.md, in the order their headers are tried. */
export type SignatureSchemeName =
  | "github"
  | "gitlab"
  | "standard"
  | "stripe"
  | "slack"
  | "shopify"
  | "linear"
  | "generic"
  | "bearer";

/**
 * How a request was authenticated: by one of the signature schemes, or by none, for a
 * subscription with `auth: none`, which the gateway serves only while it listens on a loopback
 * address (docs/subscriptions.md#auth-none). No scheme verifies `none`: the verifier refuses it
 * as `missing`, and the gateway checks `auth: none` before it asks.
 */
export type SchemeName = SignatureSchemeName | "none";

/**
 * Every signature scheme's name, in the order their headers are tried (docs/signatures.md table
 * order): the verifier tries its schemes in this order, and the first whose header is present
 * decides. `none` is not one of them.
 */
export const SCHEME_NAMES: readonly SignatureSchemeName[] = Object.freeze([
  "github",
  "gitlab",
  "standard",
  "stripe",
  "slack",
  "shopify",
  "linear",
  "generic",
  "bearer",
]);

/**
 * Tells whether `name` is one of {@link SCHEME_NAMES} (a subscription's `auth`, as read from a
 * file or a flag).
 * @param name the text to check
 * @returns true when `name` is a scheme name
 * @example
 * ```ts
 * isSchemeName("stripe"); // true
 * isSchemeName("basic"); // false
 * ```
 */
export function isSchemeName(name: string): name is SignatureSchemeName {
  return (SCHEME_NAMES as readonly string[]).includes(name);
}

/** Each scheme by its name: the type requires one for every {@link SignatureSchemeName}. */
const SCHEME_BY_NAME: Readonly<Record<SignatureSchemeName, Scheme>> = {
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

/** The schemes in docs/signatures.md table order: the first whose header is present decides. */
const SCHEMES: readonly Scheme[] = SCHEME_NAMES.map((name) => SCHEME_BY_NAME[name]);

/** Default replay window in seconds: a signed timestamp may differ from the clock by this much. */
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
 * The scheme named by a request's headers: the first of docs/signatures.md's table whose header
 * is present, whether or not its value is well-formed. For diagnostics: it tells which scheme a
 * request commits to without verifying anything.
 *
 * @param headers The request headers.
 * @returns The scheme name, or `null` when no known header is present.
 * @example
 * ```ts
 * detectScheme(new Headers({ "Stripe-Signature": "t=1,v1=00" })); // "stripe"
 * detectScheme(new Headers({ "Content-Type": "application/json" })); // null
 * ```
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
 * @example
 * ```ts
 * const verifier = createSignatureVerifier({ toleranceSeconds: 300 });
 * const result = await verifier.verify({
 *   headers: new Headers({ "X-Hub-Signature-256": "sha256=757107ea0eb2509f..." }),
 *   body: new TextEncoder().encode("Hello, World!"),
 *   secrets: ["It's a Secret to Everybody"],
 *   nowSeconds: Math.floor(Date.now() / 1000),
 * });
 * // { ok: true, scheme: "github" }
 * // or { ok: false, scheme, reason: "missing" | "invalid" | "stale" }
 * ```
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

/** What a signature may cover besides the body. */
export interface SignOptions {
  /**
   * The delivery id, for the schemes that sign one (Standard Webhooks' `webhook-id`): letters,
   * digits, `_` and `-` only, as the verifier requires.
   */
  deliveryId: string;
  /** The signing time, in seconds since the epoch (the schemes with a replay window). */
  nowSeconds: number;
}

/**
 * The headers that authenticate `body` under `secret` for `scheme`, as the scheme's senders
 * write them (Generic sends its V2 signature, Standard Webhooks the `webhook-` headers); the
 * verifier accepts them with the same secret.
 * @param scheme the scheme, e.g. `github`, `stripe`, `standard`
 * @param secret the subscription's secret (for Standard Webhooks, a `whsec_` secret is
 *   base64-decoded, as its senders do)
 * @param body the exact body text to be sent (signed as its UTF-8 bytes)
 * @param options the delivery id and the time the timestamped schemes sign
 * @returns lower-case header names and values, e.g. `{"x-hub-signature-256": "sha256=<hex>"}`;
 *   null when the secret gives no key (empty, or a `whsec_` secret that is not base64), for
 *   `none`, which signs nothing, or for a name that is no scheme (a hand-edited file)
 * @example
 * ```ts
 * const options = { deliveryId: "t-1", nowSeconds: 1_700_000_000 };
 * const headers = signRequest("stripe", secret, body, options);
 * // { "stripe-signature": "t=1700000000,v1=5257a8..." }
 * if (headers !== null) await fetch(url, { method: "POST", headers, body });
 * ```
 */
export function signRequest(
  scheme: SchemeName,
  secret: string,
  body: string,
  options: SignOptions,
): Record<string, string> | null {
  if (secret === "" || !isSchemeName(scheme)) return null;
  return SCHEME_BY_NAME[scheme].sign({
    secret,
    body,
    deliveryId: options.deliveryId,
    timestamp: String(Math.floor(options.nowSeconds)),
  });
}
