/**
 * The webhook authentication schemes of CONTRACT §5 as the rest of the program names them, and
 * the signing side of each: what subscriptions (`auth`, `subscribe --auth`) and
 * `agent webhook test` need. The verifiers are in `server/signatures/`, which takes from here
 * the scheme names, the order in which their headers are tried and how a secret becomes key
 * bytes.
 *
 * ```ts
 * if (!isSchemeName(flag)) throw new UsageError(`--auth must be one of: ${SCHEME_NAMES.join(", ")}`);
 * const headers = signRequest(flag, secret, body, { deliveryId: "t-1", nowSeconds: 1_700_000_000 });
 * ```
 *
 * @module
 */

export { type SignOptions, signRequest } from "./sign.ts";
export { decodeBase64, keyBytes, type KeyMaterial, utf8 } from "./_key_bytes.ts";

/** The authentication schemes of CONTRACT §5, in the order in which their headers are tried. */
export type SchemeName =
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
 * Every scheme name, in the order their headers are tried (CONTRACT §5 table order): the
 * verifier tries its schemes in this order, and the first whose header is present decides.
 */
export const SCHEME_NAMES: readonly SchemeName[] = Object.freeze([
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
 */
export function isSchemeName(name: string): name is SchemeName {
  return (SCHEME_NAMES as readonly string[]).includes(name);
}
