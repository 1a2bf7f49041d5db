/**
 * Reading signature headers defensively: size and character limits, signed timestamps, and the
 * bounded lists of signatures that several schemes send during a key rotation.
 *
 * @module
 */

import type { SchemeOutcome } from "./_types.ts";

/**
 * Longest header value a scheme looks at, in characters; a longer one is invalid before any
 * parsing, so a 64 KB header costs nothing. Real ones are under 300 characters. @default {4096}
 */
export const MAX_HEADER_CHARS = 4096;

/**
 * Most signatures tried from one header (Stripe `v1=` entries, Standard Webhooks `v1,` entries);
 * a header with more is invalid, which bounds the HMAC work an unauthenticated request can ask
 * for. Providers send two during a rotation. @default {8}
 */
export const MAX_SIGNATURES = 8;

/** Printable ASCII only: signatures, timestamps, ids and tokens never contain anything else. */
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/**
 * The value of header `name` when it is usable, else `null`: absent, empty, longer than
 * {@link MAX_HEADER_CHARS}, or holding a byte outside printable ASCII (Deno's `Headers` lets
 * 0x01-0xFF through; such a value is refused here instead of being re-encoded).
 */
export function headerValue(headers: Headers, name: string): string | null {
  const value = headers.get(name);
  if (value === null || value.length > MAX_HEADER_CHARS) return null;
  return PRINTABLE_ASCII.test(value) ? value : null;
}

/**
 * Checks a signed Unix timestamp (decimal seconds) against the clock, in both directions.
 *
 * @param timestamp The header text; anything but 1 to 12 digits is `invalid`.
 * @param nowSeconds The injected clock, Unix seconds.
 * @param toleranceSeconds Accepted distance from `nowSeconds`; farther is `stale`.
 * @returns `ok`, `invalid` or `stale`.
 */
export function checkTimestamp(
  timestamp: string | null,
  nowSeconds: number,
  toleranceSeconds: number,
): SchemeOutcome {
  if (timestamp === null || !/^\d{1,12}$/.test(timestamp)) return "invalid";
  return Math.abs(nowSeconds - Number(timestamp)) > toleranceSeconds ? "stale" : "ok";
}

/**
 * Decodes each of `encoded` with `decode`, dropping malformed entries as the providers' own
 * libraries do (they look for one matching entry); `null` when there are more than
 * {@link MAX_SIGNATURES} entries or none decodes.
 */
export function decodeAll(
  encoded: readonly string[],
  decode: (text: string) => Uint8Array<ArrayBuffer> | null,
): Uint8Array<ArrayBuffer>[] | null {
  if (encoded.length > MAX_SIGNATURES) return null;
  const decoded = encoded.map(decode).filter((bytes) => bytes !== null);
  return decoded.length === 0 ? null : decoded;
}
