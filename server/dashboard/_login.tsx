/**
 * Logging in (docs/dashboard.md): `GET /login?code=<code>` takes a login code that
 * `agent dashboard` made from the token, once, and answers with the session cookie and a
 * redirect to the events page, which leaves the code out of the address bar. Without a code it
 * shows how to get one.
 *
 * @module
 */
import type { Context, Hono } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { type AuthDeps, currentToken, type DashboardEnv } from "./_auth.ts";
import { LOGIN_HINT, MessagePage, sendPage } from "./_layout.tsx";
import { checkSession, LoginCodes, newSession, SESSION_MAX_AGE_SECONDS } from "./_sessions.ts";

/**
 * Adds `GET /login` to the dashboard app, in front of the session check.
 * @param app the app
 * @param auth the token file, the clock and the cookie's name
 */
export function loginRoutes(app: Hono<DashboardEnv>, auth: AuthDeps): void {
  const codes = new LoginCodes(auth.now);
  app.get("/login", async (c) => {
    const token = await currentToken(auth);
    const code = c.req.query("code");
    if (token !== null && code !== undefined && await codes.take(token, code)) {
      setCookie(c, auth.cookieName, await newSession(token, auth.now()), {
        httpOnly: true,
        sameSite: "Strict",
        path: "/",
        maxAge: SESSION_MAX_AGE_SECONDS,
      });
      return c.redirect("/events", 303);
    }
    const session = token === null
      ? null
      : await checkSession(token, getCookie(c, auth.cookieName), auth.now());
    if (session) return c.redirect("/events", 303);
    if (code === undefined) return loginPage(c, 200);
    const page = (
      <MessagePage
        title="This login link does not work"
        message={"A login link works once, for 10 minutes, until the token is rotated. " +
          "Run the command below on the gateway's machine for a new one."}
        hint="agent dashboard"
      />
    );
    return sendPage(c, page, 403);
  });
}

/**
 * The page that says how to log in.
 * @param c the request's context
 * @param status 200 for `/login` itself, 401 for a page asked for without a session
 */
export function loginPage(c: Context, status: 200 | 401): Response | Promise<Response> {
  return sendPage(c, <MessagePage {...LOGIN_HINT} />, status);
}
