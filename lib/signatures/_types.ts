/**
 * Types shared by the scheme families; the public ones are re-exported by `mod.ts`.
 *
 * @module
 */

import type { SchemeName } from "./mod.ts";
import type { KeyCache } from "./_hmac.ts";

/** One request to authenticate. */
export interface VerifyRequest {
  /** The request headers, as received. */
  headers: Headers;
  /** The raw body bytes, verified before any parsing. */
  body: Uint8Array;
  /** Current secret first, then previous ones still in their grace period; any match accepts. */
  secrets: readonly string[];
  /** The injected clock, in Unix seconds. */
  nowSeconds: number;
  /** Pinned scheme (`subscribe --auth`): the headers of every other scheme count as absent. */
  only?: SchemeName;
}

/**
 * The outcome of a verification.
 *
 * `missing`: no header of a known scheme (or of the pinned one); `invalid`: a scheme's header is
 * present but malformed or matches no secret; `stale`: its signed timestamp is outside the
 * tolerance. `scheme` is the scheme whose header decided, or the pinned scheme when its header is
 * absent, else `null`.
 */
export type VerifyResult =
  | { ok: true; scheme: SchemeName }
  | { ok: false; scheme: SchemeName | null; reason: "missing" | "invalid" | "stale" };

/** What one scheme decides about a request whose header it recognised. */
export type SchemeOutcome = "ok" | "invalid" | "stale";

/** Everything a scheme needs to check one request. */
export interface SchemeContext {
  /** The request headers. */
  headers: Headers;
  /** The raw body bytes. */
  body: Uint8Array;
  /** Candidate secrets, any of which may match. */
  secrets: readonly string[];
  /** Injected clock, Unix seconds. */
  nowSeconds: number;
  /** Accepted distance between a signed timestamp and `nowSeconds`, either direction, seconds. */
  toleranceSeconds: number;
  /** The verifier's prepared HMAC keys. */
  keys: KeyCache;
}

/** Everything a scheme needs to sign one request, as its senders do. */
export interface SigningContext {
  /** The subscription's secret (not empty). */
  secret: string;
  /** The exact body text to be sent, signed as its UTF-8 bytes. */
  body: string;
  /** The delivery id, for the schemes that sign one: letters, digits, `_` and `-`. */
  deliveryId: string;
  /** The signing time as the decimal Unix seconds the timestamped schemes send. */
  timestamp: string;
}

/** One authentication scheme: the headers that name it, its check and its signing. */
export interface Scheme {
  /** The scheme's name. */
  readonly name: SchemeName;
  /** Lower-case header names; the presence of any one commits the request to this scheme. */
  readonly headers: readonly string[];
  /** Checks a request that carries one of {@link headers}. Never throws on bad input. */
  check(context: SchemeContext): Promise<SchemeOutcome>;
  /**
   * The headers, lower-case, that authenticate a request under this scheme; null when the secret
   * gives no key.
   */
  sign(context: SigningContext): Record<string, string> | null;
}
