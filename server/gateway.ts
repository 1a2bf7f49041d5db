/**
 * Wires the running gateway: state database, worker, agent runner, targets, subscription
 * reloading and the HTTP server. `gateway run` calls {@link startGateway}; in-process tests do
 * too. The worker is built in `_worker_setup.ts`, the app's dependencies in `_app_deps.ts`;
 * retention is `_prune.ts`, the stop sequence `_stop.ts`.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { bracketed } from "../lib/config/address.ts";
import { killLeftoverAgents } from "../lib/agents/mod.ts";
import { createGatewayMetrics } from "../lib/metrics/mod.ts";
import type { Config } from "../lib/config/mod.ts";
import { recordGatewayUrl } from "../lib/state/gateway_lock.ts";
import type { StateStore } from "../lib/state/mod.ts";
import { createApp } from "./app.ts";
import {
  createIngestRefusalLog,
  internalErrorAnswer,
  type RefusalLogLimits,
} from "./ingest/mod.ts";
import { ingestDeps, routeFinder } from "./_app_deps.ts";
import { startPruning } from "./_prune.ts";
import { type Running, stopGateway } from "./_stop.ts";
import { openState } from "./_state_open.ts";
import { setUpWorker, type WorkerSetup } from "./_worker_setup.ts";
import { serveDashboard } from "./dashboard/listener.ts";

const workerLog = getLogger(["agent", "worker"]);

/** How long a stop waits for requests in flight and running agent work, in ms. */
export const STOP_DEADLINE_MS = 10_000;

/** A running gateway. */
export interface RunningGateway {
  /** The address it listens on, e.g. `http://127.0.0.1:8644`; "" when it does not ingest. */
  url: string;
  /** The bound port (useful with port 0); 0 when it does not ingest. */
  port: number;
  /** The state database (tests inspect it). */
  store: StateStore;
  /**
   * Stops gracefully: no new connections; requests in flight and running agent work get up to
   * `deadlineMs` in all, or until `hurry` aborts. Then agent runs still going are stopped (with
   * up to `ABORT_GRACE_MS` more to end; deliveries are not stopped): their events go back to
   * the queue, where the queued events stay, for the next start. Requests still open then (a
   * sender stalled mid-body) are left to the process exit.
   * @param options `deadlineMs` in milliseconds (@default {STOP_DEADLINE_MS}); `hurry`: ends
   *   the wait early (a second Ctrl-C)
   * @returns once the store is closed; never throws for slow requests or agent runs
   */
  stop(options?: { deadlineMs?: number; hurry?: AbortSignal }): Promise<void>;
  /**
   * Settles, with the cause, when the gateway can no longer keep its promises and must stop:
   * - the HTTP server stops accepting connections on its own: when the process runs out of
   *   file descriptors (Deno's HTTP server has no idle-connection or header-read timeout, so
   *   connections that send nothing stay open), Deno ends the accept loop;
   * - `state/gateway.db` is deleted or replaced while the gateway runs (checked every
   *   `STATE_CHECK_MS`): events it acknowledged would go to a file nobody can open again.
   *
   * Never settles otherwise. The error's message says what happened, for the user. `gateway run`
   * then stops and exits non-zero, which also closes every connection, so a supervisor's
   * restart serves again.
   */
  failed: Promise<Error>;
  /** Where the dashboard listens (docs/dashboard.md); undefined when it is not served. */
  dashboardUrl?: string;
}

/** What varies between the real process and tests. */
export interface GatewayOptions {
  /** Makes the outbound calls: LLM endpoint, chat platforms, forges. @default {globalThis.fetch} */
  fetch?: typeof fetch;
  /**
   * The clock, in milliseconds since the epoch. A clock given here is not checked for steps
   * against a steady one (see `WorkerDeps.monotonicNow`). @default {Date.now}
   */
  now?: () => number;
  /** Time allowed to receive a whole request body, in milliseconds. @default {30000} */
  bodyTimeoutMs?: number;
  /**
   * Bytes of request bodies received at once, over all requests; past it a body is refused
   * with 503 before it is read. @default {four times `max_body_bytes`, at least 32 MiB}
   */
  bodyBudgetBytes?: number;
  /** Waits out platform rate limits (429 `retry_after`); tests pass a fake. */
  sleep?: (ms: number) => Promise<void>;
  /** Called once listening, with the URL. */
  onListen?: (url: string) => void;
  /**
   * How many refused requests the log records (see `_refusal_log.ts`).
   * @default {100 per subscription, and 100 for the rest, per 10 s}
   */
  refusalLog?: RefusalLogLimits;
  /**
   * Serve the dashboard on its own listener as `config.dashboard` says (`gateway run` does);
   * off by default, so a gateway started in-process takes no second port. @default {false}
   */
  dashboard?: boolean;
  /**
   * The roles of this gateway (docs/running.md#splitting-the-roles): `ingest` listens for
   * webhooks (and sends direct-mode messages while their senders wait), `worker` claims queued
   * events and runs them. Only gateways sharing a PostgreSQL database may leave one out: the
   * others of the database do it. @default {both}
   */
  roles?: GatewayRoles;
}

/** What a gateway does: ingest webhooks, run the queued events, or both. */
export interface GatewayRoles {
  /** Listen for webhooks. @default {true} */
  ingest: boolean;
  /** Claim and run queued events. @default {true} */
  worker: boolean;
}

export { STATE_CHECK_MS } from "./_state_open.ts";

/**
 * Starts the gateway with a loaded configuration.
 * @param config the merged configuration (the platform must be enabled)
 * @param options what tests vary: clock, fetch, sleep, body limits, refusal log limits, and a
 *   listen callback (see {@link GatewayOptions})
 * @returns the running gateway
 * @throws Deno.errors.AddrInUse when the port is taken; StoreUnavailableError when the state
 *   database cannot be opened; ConflictError when another gateway runs with the same home
 */
export async function startGateway(
  config: Config,
  options: GatewayOptions = {},
): Promise<RunningGateway> {
  const roles = options.roles ?? { ingest: true, worker: true };
  const { webhook } = config;
  const assembled = await assemble(config, options, roles);
  const { now, failed, state, store, metrics, setup, findRoute, stopping, app } = assembled;
  const { refusals, refusalWindows, pruning } = assembled;
  const listener = await listenOrClose(
    () => roles.ingest ? listen(app, webhook) : null,
    async () => {
      pruning.stop();
      clearInterval(refusalWindows);
      await state.watch.stop();
      await findRoute.stop();
      await store.close();
      state.lock?.close();
    },
  );
  if (roles.worker) startWorker(setup, { killLeftovers: state.lock !== undefined });
  listener?.server.finished.catch((error) => failed.resolve(serverStopped(error)));
  const address = await listener?.listening;
  const url = address === undefined
    ? ""
    : await announce(address, { lock: state.lock, onListen: options.onListen });
  const dashboard = options.dashboard
    ? await serveDashboard(config, { store, now, onReplay: () => setup.worker.notify(), metrics })
    : null;
  const server = listener?.server;
  const running: Running = { ...state, server, pruning, refusals, refusalWindows, setup };
  return {
    url,
    port: address?.port ?? 0,
    store,
    failed: failed.promise,
    dashboardUrl: dashboard?.url,
    stop: async ({ deadlineMs = STOP_DEADLINE_MS, hurry } = {}) => {
      stopping.abort(); // transforms at ingest: their events are accepted for the next start
      await dashboard?.stop(); // first: it reads the store that the stop closes
      await stopGateway(running, { deadlineMs, hurry });
      await findRoute.stop(); // the subscriptions' database connections, if any
    },
  };
}

/**
 * Opens the state and builds what the gateway runs, before anything listens: the metrics, the
 * worker (not started), the refusal log, the route finder, the app and the pruning.
 * @throws StoreUnavailableError when the state database cannot be opened; ConflictError when
 *   another gateway runs with the same home
 */
async function assemble(config: Config, options: GatewayOptions, roles: GatewayRoles) {
  const now = options.now ?? Date.now;
  const failed = Promise.withResolvers<Error>();
  const state = await openState(config, { failed, roles });
  const { store } = state;
  const metrics = createGatewayMetrics({ store, now });
  const setup = setUpWorker(config, {
    store,
    fetch: options.fetch ?? fetch,
    sleep: options.sleep,
    now,
    steadyClock: options.now === undefined,
    metrics,
  });
  const { refusals, refusalWindows } = startRefusalLog(options.refusalLog);
  const { bodyTimeoutMs, bodyBudgetBytes } = options;
  const findRoute = await routeFinder(config);
  const stopping = new AbortController();
  const parts = {
    ...{ findRoute, refusals, store, now, setup, metrics, bodyTimeoutMs, bodyBudgetBytes },
    stopping: stopping.signal,
  };
  const app = createApp(ingestDeps(config, parts));
  const pruning = startPruning(store, { retentionDays: config.webhook.retentionDays, now });
  return {
    ...{ now, failed, state, store, metrics, setup, refusals, refusalWindows, findRoute },
    ...{ stopping, app, pruning },
  };
}

/**
 * Starts listening, or, when the port cannot be had, undoes what the start opened first.
 * @param start opens the listener
 * @param undo closes what was opened before it
 * @returns the listener
 * @throws what `start` throws (Deno.errors.AddrInUse when the port is taken), after `undo`
 */
async function listenOrClose<T>(start: () => T, undo: () => Promise<void>): Promise<T> {
  try {
    return start();
  } catch (error) {
    await undo();
    throw error;
  }
}

/** The gateway's refusal log, and the timer that ends its windows. */
function startRefusalLog(limits: RefusalLogLimits | undefined) {
  const refusals = createIngestRefusalLog(limits);
  // The count of refusals left out is written soon after their window ends.
  const refusalWindows = setInterval(
    () => refusals.endWindowIfOver(),
    (limits?.windowMs ?? 10_000) / 4,
  );
  return { refusals, refusalWindows };
}

/**
 * Serves the app on the configured host and port.
 * @returns the server, and its address once it listens
 * @throws Deno.errors.AddrInUse when the port is taken
 */
function listen(app: { fetch: Deno.ServeHandler }, { host, port }: Config["webhook"]) {
  const listening = Promise.withResolvers<{ hostname: string; port: number }>();
  const server = Deno.serve({
    hostname: host,
    port,
    onListen: (address) => listening.resolve(address),
    onError: () => internalErrorAnswer(),
  }, app.fetch);
  return { server, listening: listening.promise };
}

/**
 * Bound to the port: only now may the worker take over events left running (a gateway that
 * cannot listen must not touch them). Their agent programs, if a gateway that died left them
 * running, go first: the worker is about to run those events again.
 */
function startWorker(
  { agentsDir, worker }: WorkerSetup,
  { killLeftovers }: { killLeftovers: boolean },
): void {
  const leftovers = killLeftovers ? killLeftoverAgents(agentsDir) : [];
  if (leftovers.length > 0) {
    workerLog.warn("killed agent commands a gateway that died left running: {pids}", {
      pids: leftovers.join(","),
    });
  }
  worker.start();
}

/** Why `failed` settles when the HTTP server stops accepting connections on its own. */
function serverStopped(error: unknown): Error {
  return new Error(
    `The HTTP server stopped accepting connections (${
      error instanceof Error ? error.message : error
    }). Exiting so that a supervisor restarts the gateway; queued events are kept. Too ` +
      "many open connections is the usual cause: see Security in the README.",
  );
}

/**
 * Says where the gateway listens: in `gateway.lock`, and to `onListen`.
 * @returns the URL, e.g. `http://127.0.0.1:8644`
 */
async function announce(
  address: { hostname: string; port: number },
  { lock, onListen }: { lock: Deno.FsFile | undefined; onListen?: (url: string) => void },
): Promise<string> {
  const host = bracketed(address.hostname);
  const url = `http://${host}:${address.port}`;
  // Best effort: a disk too full for these few bytes must not stop a gateway that listens.
  if (lock) {
    await recordGatewayUrl(lock, address).catch((error) =>
      workerLog.warn("cannot write where the gateway listens into gateway.lock: {reason}", {
        reason: (error as Error).message,
      })
    );
  }
  onListen?.(url);
  return url;
}
