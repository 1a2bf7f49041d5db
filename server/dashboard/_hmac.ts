/**
 * HMAC-SHA-256 under the dashboard token: what login codes, session cookies and CSRF tokens are
 * made of (docs/dashboard.md). Each use signs a message that starts with its purpose, so a value
 * made for one can never pass for another. Verification goes through `crypto.subtle.verify`,
 * which compares in constant time.
 *
 * @module
 */
import { Buffer } from "node:buffer";

/** The purposes a MAC is made for; each message starts with one. */
export type MacPurpose = "login" | "session" | "csrf";

/** The token as an HMAC key; importing one takes microseconds, a dashboard request or two. */
function keyOf(token: string): Promise<CryptoKey> {
  return crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(token),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign", "verify"],
  );
}

/** `purpose|part|part...`: the message a MAC is made of. */
function message(purpose: MacPurpose, parts: readonly string[]): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode([purpose, ...parts].join("|"));
}

/**
 * The MAC of `parts` for `purpose` under `token`, in base64url without padding (43 characters).
 * @param token the dashboard token
 * @param purpose what the value is for
 * @param parts what it covers (none may contain `|`)
 */
export async function macOf(
  token: string,
  purpose: MacPurpose,
  parts: readonly string[],
): Promise<string> {
  const signature = await crypto.subtle.sign("HMAC", await keyOf(token), message(purpose, parts));
  return Buffer.from(signature).toString("base64url");
}

/**
 * Whether `mac` is the MAC of `parts` for `purpose` under `token`, compared in constant time.
 * @returns false for anything that is not such a MAC, malformed input included; never throws
 */
export async function macMatches(
  token: string,
  purpose: MacPurpose,
  parts: readonly string[],
  mac: string,
): Promise<boolean> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(mac)) return false;
  const bytes = new Uint8Array(Buffer.from(mac, "base64url"));
  return await crypto.subtle.verify("HMAC", await keyOf(token), bytes, message(purpose, parts));
}

/**
 * `byteCount` random bytes in base64url without padding.
 * @param byteCount how many bytes of randomness (16: 22 characters)
 */
export function randomText(byteCount: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(byteCount))).toString("base64url");
}
