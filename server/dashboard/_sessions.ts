/**
 * Dashboard sessions (docs/dashboard.md): login codes taken once, session cookies and CSRF
 * tokens, all signed with the dashboard token. The server keeps no session table: a cookie is
 * valid while its HMAC matches the token in `state/dashboard.token` and it is younger than
 * {@link SESSION_MAX_AGE_SECONDS}, so rotating the token ends every session at once, and a
 * restart of the gateway ends none.
 *
 * @module
 */
import { LOGIN_CODE_TTL_MS } from "./token.ts";
import { macMatches, macOf, randomText } from "./_hmac.ts";

/** How long a session lasts after its login, in seconds: 7 days. */
export const SESSION_MAX_AGE_SECONDS = 7 * 86_400;

/** A valid session: its nonce, and the CSRF token its forms carry. */
export interface Session {
  /** The session's random nonce, which its CSRF token is made from. */
  nonce: string;
  /** The value every state-changing POST of this session must carry as `_csrf`. */
  csrf: string;
}

/** `<base 36 seconds>.<nonce>.<mac>`, the shape of login codes and session cookies. */
const SIGNED_VALUE = /^([0-9a-z]{1,12})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

/**
 * The login codes already taken, so that each works once. Only codes whose HMAC matched are
 * remembered, until they expire, so nobody without the token can grow the set.
 */
export class LoginCodes {
  #used = new Map<string, number>();
  #now: () => number;

  /** @param now the clock, in ms since the epoch */
  constructor(now: () => number) {
    this.#now = now;
  }

  /**
   * Takes a login code: true once for a code made with `token` that has not expired.
   * @param token the dashboard token now
   * @param code the `code` of `/login?code=`, as given (anything)
   * @returns whether it opens a session; never throws
   */
  async take(token: string, code: string): Promise<boolean> {
    const nowMs = this.#now();
    for (const [nonce, expiresAtMs] of this.#used) {
      if (expiresAtMs <= nowMs) this.#used.delete(nonce);
    }
    const match = SIGNED_VALUE.exec(code);
    if (!match) return false;
    const [, expiry, nonce, mac] = match;
    const expiresAtMs = parseInt(expiry, 36) * 1000;
    // A code made in the future (a clock set back since) may live at most its own span.
    if (expiresAtMs <= nowMs || expiresAtMs > nowMs + LOGIN_CODE_TTL_MS + 60_000) return false;
    if (this.#used.has(nonce)) return false;
    if (!(await macMatches(token, "login", [expiry, nonce], mac))) return false;
    if (this.#used.has(nonce)) return false; // taken by a request that overtook this one
    this.#used.set(nonce, expiresAtMs);
    return true;
  }
}

/**
 * A new session cookie's value.
 * @param token the dashboard token
 * @param nowMs now, in ms since the epoch
 * @returns `<issued, base 36 seconds>.<nonce>.<HMAC>`
 */
export async function newSession(token: string, nowMs: number): Promise<string> {
  const issued = Math.floor(nowMs / 1000).toString(36);
  const nonce = randomText(16);
  return `${issued}.${nonce}.${await macOf(token, "session", [issued, nonce])}`;
}

/**
 * Checks a session cookie's value.
 * @param token the dashboard token now
 * @param value the cookie's value, as the browser sent it (anything)
 * @param nowMs now, in ms since the epoch
 * @returns the session, or null when the value is malformed, expired, or made with another
 *   token; never throws
 */
export async function checkSession(
  token: string,
  value: string | undefined,
  nowMs: number,
): Promise<Session | null> {
  const match = SIGNED_VALUE.exec(value ?? "");
  if (!match) return null;
  const [, issued, nonce, mac] = match;
  const issuedAtMs = parseInt(issued, 36) * 1000;
  if (issuedAtMs > nowMs + 60_000 || issuedAtMs + SESSION_MAX_AGE_SECONDS * 1000 <= nowMs) {
    return null;
  }
  if (!(await macMatches(token, "session", [issued, nonce], mac))) return null;
  return { nonce, csrf: await macOf(token, "csrf", [nonce]) };
}

/**
 * Whether `given` is the CSRF token of `session`, compared in constant time.
 * @param token the dashboard token now
 * @param session the request's session
 * @param given the `_csrf` field of the form, as sent (anything)
 */
export function csrfMatches(
  token: string,
  session: Session,
  given: string | undefined,
): Promise<boolean> {
  return macMatches(token, "csrf", [session.nonce], given ?? "");
}
