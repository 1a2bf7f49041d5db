/**
 * Helpers of the dashboard's tests: a home with a real SQLite store and a dashboard app on it,
 * in-process, with a clock the test moves; logging in as a browser would, with a link made as
 * `agent dashboard` makes it.
 *
 * @module
 */
import { join } from "node:path";
import { loadConfig } from "../../../lib/config/mod.ts";
import { createGatewayMetrics, type GatewayMetrics } from "../../../lib/metrics/mod.ts";
import type { NewEvent } from "../../../lib/state/mod.ts";
import { openStateStore, type SqliteStateStore } from "../../../lib/state/sqlite/mod.ts";
import {
  createDashboardApp,
  dashboardTokenPath,
  ensureToken,
  EventFeed,
  makeLoginCode,
} from "../../../server/dashboard/mod.ts";
import { tempHome } from "../../_helpers.ts";

/** A dashboard on a fresh home, in-process. */
export interface DashboardWorld extends AsyncDisposable {
  home: string;
  store: SqliteStateStore;
  app: ReturnType<typeof createDashboardApp>;
  /** The feed the app's live streams follow; its timer never fires: call `tick()`. */
  feed: EventFeed;
  /** Runs one poll of the feed, as its timer would. */
  tick(): Promise<void>;
  /** The clock's time, in ms; tests move it. */
  clock: { nowMs: number };
  tokenPath: string;
  /** How many times a replay woke the worker. */
  wakes: { count: number };
  /** The gateway's metrics the app shows, on the test's clock. */
  metrics: GatewayMetrics;
}

/** A GitHub `issues.opened` event of subscription `gh`, answered to the log. */
export function issueEvent(overrides: Partial<NewEvent> = {}): NewEvent {
  return {
    subscription: "gh",
    eventLabel: "issues.opened",
    deliveryId: crypto.randomUUID(),
    dedupe: true,
    source: "github",
    mode: "agent",
    payload: JSON.stringify({ action: "opened", issue: { number: 7, title: "Crash on start" } }),
    prompt: "Triage issue #7: Crash on start",
    route: { deliver: "log", skills: [] },
    receivedAtMs: 1_800_000_000_000,
    ...overrides,
  };
}

/**
 * Builds a dashboard on a fresh home: config.yaml with `subscriptions` as a dynamic
 * subscription file, a real store, and the app.
 * @param options `subscriptions`: the records of `webhook_subscriptions.json`
 */
export async function dashboardWorld(
  options: { subscriptions?: Record<string, unknown> } = {},
): Promise<DashboardWorld> {
  const h = await tempHome({ config: "platforms:\n  webhook:\n    enabled: true\n" });
  const config = await loadConfig({ AGENT_HOME: h.home });
  await Deno.writeTextFile(
    config.paths.subscriptions,
    JSON.stringify(options.subscriptions ?? {}),
  );
  const clock = { nowMs: 1_800_000_000_000 };
  const store = openStateStore(join(h.home, "state", "gateway.db"), {
    backgroundCheckpoints: false,
    now: () => clock.nowMs,
  });
  const ticks: (() => Promise<void>)[] = [];
  const feed = new EventFeed(store, {
    clockMs: () => 0, // reads never rest: each tick() reads
    every: (_ms, tick) => {
      ticks.push(tick);
      return () => ticks.splice(ticks.indexOf(tick), 1);
    },
  });
  const tokenPath = dashboardTokenPath(config.paths.stateDb);
  await ensureToken(tokenPath);
  const wakes = { count: 0 };
  const metrics = createGatewayMetrics({ store, now: () => clock.nowMs, processMetrics: false });
  const app = createDashboardApp({
    metrics,
    store,
    config,
    now: () => clock.nowMs,
    feed,
    onReplay: () => wakes.count++,
  });
  return {
    home: h.home,
    store,
    app,
    feed,
    tick: async () => {
      for (const tick of [...ticks]) await tick();
    },
    clock,
    tokenPath,
    wakes,
    metrics,
    async [Symbol.asyncDispose]() {
      feed.close();
      await store.close();
      await h[Symbol.asyncDispose]();
    },
  };
}

/**
 * Logs in as a browser would with the link `agent dashboard` prints.
 * @returns the `Cookie` header of the session, and its CSRF token (from the events page's form)
 */
export async function logIn(world: DashboardWorld): Promise<{ cookie: string; csrf: string }> {
  const code = await makeLoginCode(await ensureToken(world.tokenPath), world.clock.nowMs);
  const login = await world.app.request(`/login?code=${code}`);
  await login.body?.cancel();
  if (login.status !== 303) throw new Error(`login answered ${login.status}`);
  const cookie = login.headers.get("set-cookie")!.split(";")[0];
  const page = await world.app.request("/events", { headers: { cookie } });
  const csrf = (await page.text()).match(/name="_csrf" value="([^"]+)"/)![1];
  return { cookie, csrf };
}

/** A form POST of a page of the dashboard, as the browser sends it: same origin. */
export function formPost(
  session: { cookie: string },
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): RequestInit {
  return {
    method: "POST",
    headers: {
      cookie: session.cookie,
      "content-type": "application/x-www-form-urlencoded",
      origin: "http://localhost",
      "sec-fetch-site": "same-origin",
      ...headers,
    },
    body: new URLSearchParams(fields).toString(),
  };
}
