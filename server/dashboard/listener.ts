/**
 * The dashboard's own listener (docs/dashboard.md), which `gateway run` starts beside the
 * webhook one (default `127.0.0.1:8645`), and where it listens, written to
 * `state/dashboard.url` for `agent dashboard` to print.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { getLogger } from "@logtape/logtape";
import { hostAndPort, localUrl } from "../../lib/config/address.ts";
import type { Config } from "../../lib/config/mod.ts";
import { writeFileAtomic } from "../../lib/config/fs.ts";
import { ConflictError } from "../../lib/errors.ts";
import { gatewayRunning } from "../../lib/state/gateway_lock.ts";
import { settledWithin } from "../../lib/worker/wait.ts";
import { createDashboardApp, type DashboardDeps } from "./mod.ts";
import { EventFeed } from "./_feed.ts";
import { dashboardTokenPath, ensureToken } from "./token.ts";

const log = getLogger(["agent", "dashboard"]);

/** The longest a stop waits for the dashboard's requests in flight, in ms. */
const DASHBOARD_STOP_MS = 2000;

/** A dashboard that listens. */
export interface RunningDashboard {
  /** Where this machine reaches it, e.g. `http://127.0.0.1:8645`. */
  url: string;
  /**
   * Ends the live streams and stops listening, once the requests in flight are answered or
   * after 2 s.
   * @returns once the server has stopped or the wait is over; never throws
   */
  stop(): Promise<void>;
}

/**
 * Serves the dashboard when `config.dashboard.enabled` says so (see {@link startDashboard}). A
 * dashboard that cannot start (its port taken, its token file unwritable, whatever the cause)
 * is said in the log and left out: the webhooks, which senders rely on, are served all the same.
 * @param config the merged configuration
 * @param deps the gateway's store, clock, what to call after a replay, and its metrics
 * @returns the running dashboard; null when it is turned off or could not start
 */
export async function serveDashboard(
  config: Config,
  deps: Pick<DashboardDeps, "store" | "now" | "onReplay" | "metrics">,
): Promise<RunningDashboard | null> {
  if (!config.dashboard.enabled) {
    // A file an earlier run left would send `agent dashboard` to a dashboard that is not there.
    await Deno.remove(dashboardUrlPath(config.paths.stateDb)).catch(() => {});
    return null;
  }
  try {
    return await startDashboard(config, deps);
  } catch (error) {
    log.error("the dashboard is not served: {reason}", { reason: (error as Error).message });
    return null;
  }
}

/**
 * Creates the token when there is none, then serves the dashboard on `config.dashboard`'s host
 * and port.
 * @param config the merged configuration
 * @param deps the gateway's store, clock, what to call after a replay, and its metrics
 * @returns the running dashboard
 * @throws ConflictError when the port is taken, naming the settings that change it
 * @throws ConfigError when the token file cannot be read or written
 */
export async function startDashboard(
  config: Config,
  deps: Pick<DashboardDeps, "store" | "now" | "onReplay" | "metrics">,
): Promise<RunningDashboard> {
  const { host, port } = config.dashboard;
  await ensureToken(dashboardTokenPath(config.paths.stateDb));
  const closing = new AbortController();
  const feed = new EventFeed(deps.store, {
    onError: (error) =>
      log.warn("live updates cannot read the state database: {reason}", {
        reason: (error as Error).message,
      }),
  });
  const app = createDashboardApp({
    ...deps,
    config,
    feed,
    closing: closing.signal,
    cookieName: `agent_dashboard_${port}`,
  });
  const listening = Promise.withResolvers<{ hostname: string; port: number }>();
  let server: Deno.HttpServer;
  try {
    server = Deno.serve({
      hostname: host,
      port,
      onListen: (address) => listening.resolve(address),
      onError: () => new Response("Internal error", { status: 500 }),
    }, app.fetch);
  } catch (error) {
    if (!(error instanceof Deno.errors.AddrInUse)) throw error;
    throw new ConflictError(
      `Cannot serve the dashboard on ${hostAndPort(host, port)}: another program listens ` +
        "there; set another port with --dashboard-port (or DASHBOARD_PORT, or dashboard.port " +
        "in config.yaml), or turn it off with dashboard.enabled: false",
    );
  }
  const address = await listening.promise;
  const url = localUrl(address.hostname, address.port);
  const urlFile = dashboardUrlPath(config.paths.stateDb);
  await writeFileAtomic(urlFile, `${url}\n`).catch((error) =>
    log.warn("cannot write where the dashboard listens: {reason}", { reason: error.message })
  );
  return {
    url,
    async stop() {
      closing.abort();
      feed.close();
      // A page that stalls mid-request must not hold the gateway's stop: it is left to the exit.
      await settledWithin(server.shutdown(), DASHBOARD_STOP_MS);
      await Deno.remove(urlFile).catch(() => {});
    },
  };
}

/** `state/dashboard.url`: where the running gateway's dashboard listens. */
function dashboardUrlPath(stateDb: string): string {
  return join(dirname(stateDb), "dashboard.url");
}

/**
 * Where the dashboard of the gateway running with this home listens, as it wrote it.
 * @param stateDb the path of `state/gateway.db`
 * @returns its URL (`http://127.0.0.1:8645`); null when no gateway runs, or it serves no
 *   dashboard
 */
export async function runningDashboardUrl(stateDb: string): Promise<string | null> {
  if (!(await gatewayRunning(stateDb))) return null;
  try {
    const text = (await Deno.readTextFile(dashboardUrlPath(stateDb))).trim();
    return /^http:\/\/\S+$/.test(text) ? text : null;
  } catch {
    return null;
  }
}
