/**
 * What every dashboard response goes through (docs/dashboard.md): the security headers, the
 * session check in front of every page and API, the bearer token `GET /metrics` may take
 * instead, and the CSRF check in front of every POST.
 *
 * @module
 */
import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import { createHash, timingSafeEqual } from "node:crypto";
import { ConfigError } from "../../lib/errors.ts";
import { readToken } from "./token.ts";
import { checkSession, csrfMatches, type Session } from "./_sessions.ts";

/** What the dashboard's middleware and handlers share per request. */
export type DashboardEnv = {
  Variables: {
    /** The dashboard token as the file holds it now. */
    token: string;
    /** The request's session; null when a bearer token let it in. */
    session: Session | null;
  };
};

/** What the session check needs. */
export interface AuthDeps {
  /** The token file (`state/dashboard.token`), read at each request: a rotation acts at once. */
  tokenPath: string;
  /** The clock, in ms since the epoch. */
  now: () => number;
  /** The session cookie's name. */
  cookieName: string;
  /** Told when the token file cannot be read or holds no token. */
  onTokenError?: (error: ConfigError) => void;
}

/**
 * The Content-Security-Policy: scripts and styles from the dashboard's own embedded files only,
 * no inline script, no frames, forms posted only to itself.
 */
export const CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self'; " +
  "style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'";

/**
 * Sets the security headers on every response, refusals and errors included: the CSP, no
 * framing, no referrer to other sites (what the dashboard's addresses hold stays in it; with
 * `no-referrer`, browsers would send `Origin: null` on the dashboard's own forms), no sniffing,
 * no caching of pages that show payloads.
 */
export const securityHeaders: MiddlewareHandler = async (c, next) => {
  await next();
  const headers = c.res.headers;
  headers.set("Content-Security-Policy", CONTENT_SECURITY_POLICY);
  headers.set("X-Frame-Options", "DENY");
  headers.set("Referrer-Policy", "same-origin");
  headers.set("X-Content-Type-Options", "nosniff");
  headers.set("Cross-Origin-Opener-Policy", "same-origin");
  headers.set("Cross-Origin-Resource-Policy", "same-origin");
  if (!headers.has("Cache-Control")) headers.set("Cache-Control", "no-store");
};

/**
 * Reads the token for the request; a file that cannot be read, or holds no token, lets nobody
 * in until it is fixed (`agent dashboard --rotate`).
 * @returns the token, or null when there is none to check against
 */
export async function currentToken(deps: AuthDeps): Promise<string | null> {
  try {
    return await readToken(deps.tokenPath);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    deps.onTokenError?.(error);
    return null;
  }
}

/**
 * Lets a request through with a valid session cookie or, when `bearer` is set, with the token as
 * `Authorization: Bearer <token>` (for a Prometheus scrape); refuses it with `refuse` otherwise.
 * @param deps the token file, the clock and the cookie's name
 * @param options `bearer`: accept the token itself; `refuse`: the answer to a request without a
 *   session (a page saying how to log in, or JSON)
 */
export function requireSession(
  deps: AuthDeps,
  options: { bearer?: boolean; refuse: (c: Context) => Response | Promise<Response> },
): MiddlewareHandler<DashboardEnv> {
  return async (c, next) => {
    const token = await currentToken(deps);
    if (token === null) return await options.refuse(c);
    c.set("token", token);
    const authorization = c.req.header("Authorization");
    if (options.bearer && authorization?.startsWith("Bearer ")) {
      if (!sameSecret(authorization.slice(7).trim(), token)) return await options.refuse(c);
      c.set("session", null);
      return await next();
    }
    const session = await checkSession(token, getCookie(c, deps.cookieName), deps.now());
    if (!session) return await options.refuse(c);
    c.set("session", session);
    await next();
  };
}

/**
 * Refuses, with `refuse`, a POST that another site could have made: one without this session's
 * CSRF token in its `_csrf` form field, or whose `Origin` names another host than the one the
 * request was sent to, or that the browser marks as cross-site (`Sec-Fetch-Site`). The
 * `SameSite=Strict` cookie already keeps other sites' requests out of the session; this holds
 * even for a browser that does not honour it.
 * @param options `refuse`: the answer to a refused POST
 */
export function requireCsrf(
  options: { refuse: (c: Context) => Response | Promise<Response> },
): MiddlewareHandler<DashboardEnv> {
  return async (c, next) => {
    const session = c.get("session");
    const site = c.req.header("Sec-Fetch-Site");
    const origin = c.req.header("Origin");
    const host = new URL(c.req.url).host; // Deno.serve builds the URL from the Host header
    const crossSite = (site !== undefined && site !== "same-origin" && site !== "none") ||
      (origin !== undefined && (!URL.canParse(origin) || new URL(origin).host !== host));
    if (!session || crossSite) return await options.refuse(c);
    const form = await c.req.parseBody().catch(() => ({} as Record<string, unknown>));
    const given = typeof form._csrf === "string" ? form._csrf : undefined;
    if (!(await csrfMatches(c.get("token"), session, given))) return await options.refuse(c);
    await next();
  };
}

/** Whether two secrets are equal, compared in constant time (of their SHA-256 digests). */
function sameSecret(given: string, token: string): boolean {
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(given), digest(token));
}
