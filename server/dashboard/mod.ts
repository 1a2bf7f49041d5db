/**
 * The dashboard (docs/dashboard.md): pages rendered on the server that show what became of
 * every event, served by `agent gateway run` on a listener of its own (`listener.ts`), so that
 * exposing the webhook port never exposes it.
 *
 * Every page and API needs a session, on loopback too: `agent dashboard` prints a login link
 * made from the token in `state/dashboard.token` (`token.ts`), and the link's code opens a
 * session cookie (`HttpOnly; SameSite=Strict`). Every state-changing action is a POST with a
 * CSRF token. Only the embedded style sheet and script, and the login page, are served without
 * a session. Nothing here runs on the webhook request path.
 *
 * @module
 */
import { type Context, Hono } from "hono";
import { deleteCookie } from "hono/cookie";
import { getLogger } from "@logtape/logtape";
import type { Config } from "../../lib/config/mod.ts";
import { type GatewayMetrics, metricsHandler } from "../../lib/metrics/mod.ts";
import { StoreUnavailableError } from "../../lib/errors.ts";
import type { StateStore } from "../../lib/state/mod.ts";
import { readSubscriptionsOrErrorOf } from "../../lib/subscriptions/source.ts";
import { LIVE_SCRIPT, STYLE_SHEET } from "./_assets.ts";
import {
  type AuthDeps,
  type DashboardEnv,
  requireCsrf,
  requireSession,
  securityHeaders,
} from "./_auth.ts";
import { eventRoutes } from "./_event_routes.tsx";
import { EventFeed } from "./_feed.ts";
import { loginPage, loginRoutes } from "./_login.tsx";
import { overviewRoutes } from "./_overview.tsx";
import { PLAYGROUND_SCRIPT, PLAYGROUND_STYLE } from "./_playground_assets.ts";
import { playgroundRoutes } from "./_playground_page.tsx";
import { SUBSCRIPTIONS_STYLE } from "./_subscriptions_assets.ts";
import { subscriptionRoutes } from "./_subscriptions_routes.tsx";
import { REPLAY_STYLE } from "./_replay_style.ts";
import { dashboardTokenPath } from "./token.ts";

export { dashboardTokenPath, ensureToken, makeLoginCode, readToken, rotateToken } from "./token.ts";
export { LOGIN_CODE_TTL_MS } from "./token.ts";
export { EventFeed, FEED_INTERVAL_MS } from "./_feed.ts";

const log = getLogger(["agent", "dashboard"]);

/** What the dashboard reads and does. */
export interface DashboardDeps {
  /** The gateway's state store. */
  store: Pick<
    StateStore,
    | "listEvents"
    | "getEvent"
    | "attempts"
    | "replay"
    | "lineage"
    | "keyHolder"
    | "activity"
    | "queueStats"
    | "subscriptionCounts"
  >;
  /** The home's paths (the token, the subscription file) and the static routes. */
  config: Pick<Config, "paths" | "webhook" | "env">;
  /** The clock, in ms since the epoch (the store's). */
  now: () => number;
  /** The session cookie's name. @default {"agent_dashboard"} */
  cookieName?: string;
  /** The live feed. @default {a feed of `store` polled every second} */
  feed?: EventFeed;
  /** Aborted when the dashboard stops: live streams end. */
  closing?: AbortSignal;
  /** Called after a replay queued an event again, to wake the worker. */
  onReplay?: () => void;
  /**
   * The gateway's metrics, served as `GET /metrics` (docs/metrics.md), with the refused
   * requests and runs in flight the overview shows; none when omitted.
   */
  metrics?: Pick<GatewayMetrics, "registry" | "refusedPerMinute" | "agentRunsInFlight">;
}

/** What the routes share, defaults filled in. */
export interface AppParts extends Required<Omit<DashboardDeps, "cookieName" | "metrics">> {
  auth: AuthDeps;
  /** The names of the subscriptions and static routes, sorted, for the filters. */
  subscriptionNames(): Promise<string[]>;
}

/**
 * Builds the dashboard's Hono app.
 * @param deps the store, the configuration, the clock and the rest (see {@link DashboardDeps})
 * @returns the app; serve its `fetch` (see `startDashboard` in `listener.ts`)
 * @example
 * ```ts
 * const app = createDashboardApp({ store, config, now: Date.now });
 * const response = await app.request("/events"); // 401 without a session
 * ```
 */
export function createDashboardApp(deps: DashboardDeps): Hono<DashboardEnv> {
  const auth: AuthDeps = {
    tokenPath: dashboardTokenPath(deps.config.paths.stateDb),
    now: deps.now,
    cookieName: deps.cookieName ?? "agent_dashboard",
    onTokenError: (error) => log.error("dashboard refused: {reason}", { reason: error.message }),
  };
  const parts: AppParts = {
    store: deps.store,
    config: deps.config,
    now: deps.now,
    feed: deps.feed ?? new EventFeed(deps.store),
    closing: deps.closing ?? new AbortController().signal,
    onReplay: deps.onReplay ?? (() => {}),
    auth,
    subscriptionNames: () => subscriptionNames(deps.config),
  };
  const app = new Hono<DashboardEnv>();
  app.use("*", securityHeaders);
  app.onError((error, c) => failure(c, error));
  app.get(
    "/assets/app.css",
    (c) =>
      asset(c, STYLE_SHEET + PLAYGROUND_STYLE + REPLAY_STYLE + SUBSCRIPTIONS_STYLE, "text/css"),
  );
  app.get("/assets/app.js", (c) => asset(c, LIVE_SCRIPT, "text/javascript"));
  app.get("/assets/playground.js", (c) => asset(c, PLAYGROUND_SCRIPT, "text/javascript"));
  loginRoutes(app, auth);
  if (deps.metrics) {
    // Before the session check of the pages: Prometheus sends the token as a bearer header.
    const scrape = requireSession(auth, { bearer: true, refuse: refuseWithoutSession });
    app.get("/metrics", scrape, metricsHandler(deps.metrics));
  }
  app.use("*", requireSession(auth, { bearer: false, refuse: (c) => refuseWithoutSession(c) }));
  app.post("*", requireCsrf({ refuse: (c) => refuseCrossSite(c) }));
  app.get("/", (c) => c.redirect("/overview", 303));
  app.post("/logout", (c) => {
    deleteCookie(c, auth.cookieName, { path: "/" });
    return c.redirect("/login", 303);
  });
  eventRoutes(app, parts);
  overviewRoutes(app, parts, deps.metrics);
  playgroundRoutes(app, parts);
  subscriptionRoutes(app, parts);
  app.notFound((c) => c.json({ error: "Not found" }, 404));
  return app;
}

/** An embedded asset; the same for everyone, so served without a session. */
function asset(c: Context, text: string, type: string): Response {
  return c.body(text, 200, {
    "Content-Type": `${type}; charset=utf-8`,
    "Cache-Control": "no-cache",
  });
}

/** The answer without a session: how to log in (a page), or 401 JSON for the APIs and streams. */
function refuseWithoutSession(c: Context): Response | Promise<Response> {
  if (wantsJson(c)) return c.json({ error: "Log in first: run agent dashboard" }, 401);
  return loginPage(c, 401);
}

/** The answer to a POST another site could have made. */
function refuseCrossSite(c: Context): Response {
  return c.json({ error: "Refused: this request did not come from a dashboard page" }, 403);
}

/** Whether a refusal is answered as JSON: APIs, streams and metrics, not pages. */
function wantsJson(c: Context): boolean {
  const path = c.req.path;
  return path.startsWith("/api/") || path === "/events/stream" || path === "/metrics";
}

/** An error no route turned into an answer: said in the log, never in the page. */
function failure(c: Context, error: Error): Response | Promise<Response> {
  if (error instanceof StoreUnavailableError) {
    log.error("dashboard cannot read the state database: {reason}", { reason: error.message });
    return c.json({ error: "The state database cannot be read now; see the gateway's log" }, 503);
  }
  log.error("dashboard request failed: {reason}", { reason: error.stack ?? error.message });
  return c.json({ error: "Internal error; see the gateway's log" }, 500);
}

/** The names of the static routes and the subscriptions, sorted, for the filters. */
async function subscriptionNames(config: Pick<Config, "paths" | "webhook">): Promise<string[]> {
  const records = await readSubscriptionsOrErrorOf(config);
  const dynamic = records instanceof Error ? [] : Object.keys(records);
  return [...new Set([...config.webhook.routes.keys(), ...dynamic])].sort();
}
