/**
 * Wires the running gateway: state database, worker, agent runner, targets, subscription
 * reloading and the HTTP server. `gateway run` calls {@link startGateway}; in-process tests do
 * too.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { dirname, join } from "node:path";
import { agentProcessNotes, createAgentRunner, killLeftoverAgents } from "../lib/agents/mod.ts";
import type { Config } from "../lib/config.ts";
import { lockGatewayState, recordGatewayUrl } from "../lib/gateway_lock.ts";
import { createMemoryRateLimiter } from "../lib/rate_limit.ts";
import { systemPromptFor } from "../lib/skills.ts";
import { corruptionAdvice, openStateStore, type StateStore } from "../lib/state/mod.ts";
import { settledWithin } from "../lib/wait.ts";
import { findRoute } from "../lib/routes.ts";
import { SubscriptionFileCache, unusableSubscriptions } from "../lib/subscription_store.ts";
import { deliver, type TargetContext } from "../lib/targets/mod.ts";
import { createWorker, STORE_REFUSED_RETRY_MS } from "../lib/worker.ts";
import { createApp } from "./app.ts";
import { createIngestRefusalLog } from "./ingest.ts";
import { deliveryKey } from "./_direct.ts";
import type { RefusalLogLimits } from "./_refusal_log.ts";
import { createHeldDirectRecords } from "./_held_direct.ts";
import { type StateFileWatch, watchStateFile } from "./_state_watch.ts";
import { createSignatureVerifier } from "./signatures/mod.ts";

/** How long a stop waits for requests in flight and running agent work, in ms. */
export const STOP_DEADLINE_MS = 10_000;

/** A running gateway. */
export interface RunningGateway {
  /** The address it listens on, e.g. `http://127.0.0.1:8644`. */
  url: string;
  /** The bound port (useful with port 0). */
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
   *   {@link STATE_CHECK_MS}): events it acknowledged would go to a file nobody can open again.
   *
   * Never settles otherwise. The error's message says what happened, for the user. `gateway run`
   * then stops and exits non-zero, which also closes every connection, so a supervisor's
   * restart serves again.
   */
  failed: Promise<Error>;
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
}

/** How often the gateway checks that `state/gateway.db` is still the file it opened, in ms. */
export const STATE_CHECK_MS = 1000;

/**
 * Rows deleted per prune batch, each one transaction on the event loop. With secure_delete
 * (pruned payloads overwritten), 1,000 events of 21 KB took 130 to 207 ms, during which no
 * request is served; 250 keep a batch near 50 ms.
 */
const PRUNE_BATCH = 250;

/** How often old events (with their idempotency keys) are pruned, in milliseconds. */
const PRUNE_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Starts the gateway with a loaded configuration.
 * @param config the merged configuration (the platform must be enabled)
 * @param options what tests vary: clock, fetch, sleep, body limits, refusal log limits, and a
 *   listen callback (see {@link GatewayOptions})
 * @returns the running gateway
 * @throws Deno.errors.AddrInUse when the port is taken; StoreUnavailableError when the state
 *   database cannot be opened, or another gateway runs with the same home
 */
export async function startGateway(
  config: Config,
  options: GatewayOptions = {},
): Promise<RunningGateway> {
  const fetchFn = options.fetch ?? fetch;
  const now = options.now ?? Date.now;
  const { webhook, agent, paths } = config;
  const stateLock = await lockGatewayState(paths.stateDb);
  const failed = Promise.withResolvers<Error>();
  let store: StateStore;
  let stateWatch: StateFileWatch;
  try {
    store = openStateStore(paths.stateDb, {
      idempotencyTtlSeconds: webhook.idempotencyTtlSeconds,
      // SQLite calls block the event loop: a lock held by another process (a CLI command) may
      // stall every request this long before the sender gets 503.
      busyTimeoutMs: 1000,
      // A corrupt file served 503 for ever, or took events it may not give back, and a
      // supervisor never learnt of it: the gateway stops, as when the file is replaced.
      onCorrupt: (reason) =>
        failed.resolve(
          new Error(
            `The state database is corrupt (${reason}). Stopping, so that no more events are ` +
              `acknowledged into it. ${corruptionAdvice(paths.stateDb)}`,
          ),
        ),
    });
    stateWatch = watchStateFile(paths.stateDb, {
      intervalMs: STATE_CHECK_MS,
      onGone: (message) => failed.resolve(new Error(message)),
    });
  } catch (error) {
    stateLock.close();
    throw error;
  }
  const workerLog = getLogger(["agent", "worker"]);
  const targetLog = getLogger(["agent", "target"]);
  const targets: TargetContext = {
    env: config.env,
    fetch: fetchFn,
    sleep: options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    log: (message, properties) => targetLog.info(message, properties),
    homeTarget: webhook.homeTarget,
  };
  // Direct deliveries under way, shared by the HTTP side and the worker (see IngestDeps.sending).
  const sending = new Set<string>();
  // Where running `command` agents are noted, for the next start to kill if this gateway dies.
  const agentsDir = join(dirname(paths.stateDb), "agents");
  const processNotes = agentProcessNotes(agentsDir);
  const heldDirect = createHeldDirectRecords(store, {
    retryMs: STORE_REFUSED_RETRY_MS,
    ttlMs: webhook.idempotencyTtlSeconds * 1000,
    onDropped: (event) =>
      workerLog.error(
        "direct delivery {delivery_id} of {subscription} not recorded: too many held",
        {
          subscription: event.subscription,
          delivery_id: event.deliveryId,
        },
      ),
  });
  const worker = createWorker({
    store,
    runAgent: createAgentRunner(agent, {
      fetch: fetchFn,
      env: config.env,
      processNotes,
      warn: (message, properties) => workerLog.warn(message, properties),
    }),
    deliver: (job, onPartSent) => deliver(job, targets, onPartSent),
    systemPrompt: (skills) => systemPromptFor(paths.skills, skills),
    now,
    // The system clock is checked against a steady one; a clock a test gives is not.
    monotonicNow: options.now === undefined ? () => performance.now() : undefined,
    random: Math.random,
    maxConcurrency: agent.maxConcurrency,
    retry: agent.retry,
    log: (level, message, properties) => workerLog[level](message, properties),
    // Being sent, or delivered with its record held: a replay waits for the record, then finds
    // that the message went out.
    isBeingSent: (subscription, deliveryId) =>
      sending.has(deliveryKey(subscription, deliveryId)) ||
      heldDirect.delivered(subscription, deliveryId, now()),
  });

  const subscriptionLog = getLogger(["agent", "subscriptions"]);
  // Records edited by hand that cannot be served: their requests are refused (404), said in the
  // log each time the file is read, so a bad record never costs an agent run it cannot deliver.
  let unusable = new Map<string, string>();
  // Said once in the log (and on the console) when the file becomes unreadable and when it is
  // readable again, so serving the last good copy (or none, at start) is never silent.
  const subscriptions = new SubscriptionFileCache(paths.subscriptions, {
    onErrorChange: (error, records) => {
      if (!error) return subscriptionLog.info("subscription file readable again");
      subscriptionLog.error("{reason}; serving the last good copy ({count} subscriptions)", {
        reason: error.message,
        count: Object.keys(records).length,
      });
    },
    onReload: (records) => {
      unusable = unusableSubscriptions(records, paths.subscriptions, webhook.routes);
      for (const reason of unusable.values()) {
        subscriptionLog.error("{reason}; its requests are refused until it is fixed", { reason });
      }
    },
  });
  subscriptions.current(); // reads the file now, so a corrupt one is reported at start
  const refusals = createIngestRefusalLog(options.refusalLog);
  // The count of refusals left out is written soon after their window ends.
  const refusalWindows = setInterval(
    () => refusals.endWindowIfOver(),
    (options.refusalLog?.windowMs ?? 10_000) / 4,
  );
  const app = createApp({
    refusals,
    findRoute: (name, options) => {
      const records = subscriptions.current(options); // may read the file anew: first
      return unusable.has(name) ? undefined : findRoute(name, records, webhook.routes);
    },
    maxBodyBytes: webhook.maxBodyBytes,
    bodyTimeoutMs: options.bodyTimeoutMs,
    bodyBudgetBytes: options.bodyBudgetBytes,
    rateLimitPerMinute: webhook.rateLimitPerMinute,
    globalSecret: webhook.secret,
    verifier: createSignatureVerifier(),
    rateLimiter: createMemoryRateLimiter(),
    store,
    onAccepted: () => worker.notify(),
    deliverDirect: (job, onPartSent) =>
      deliver(job, { ...targets, maxRateLimitWaitMs: 10_000 }, onPartSent),
    now,
    newId: () => crypto.randomUUID(),
    sending,
    heldDirect,
  });

  let stopping = false;
  let pruning = false;
  const prune = async () => {
    // A prune still going after an hour (a huge backlog) is not joined by a second one.
    if (pruning) return;
    pruning = true;
    const total = { events: 0 };
    try {
      // Batches of PRUNE_BATCH rows, with requests served in between.
      while (!stopping) {
        const pruned = await store.prune(now(), {
          retentionDays: webhook.retentionDays,
          maxRows: PRUNE_BATCH,
        });
        total.events += pruned.events;
        if (pruned.events < PRUNE_BATCH) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    } catch (error) {
      // A busy or full database must not end the process: the next hour tries again. (A stop
      // closes the store under a batch waiting for its checkpoint: nothing to say then.)
      if (!stopping) {
        workerLog.warn("prune failed: {reason}", { reason: (error as Error).message });
      }
    } finally {
      pruning = false;
    }
    if (total.events) workerLog.info("pruned old events", total);
  };
  void prune();
  const pruneTimer = setInterval(prune, PRUNE_INTERVAL_MS);

  const listening = Promise.withResolvers<{ hostname: string; port: number }>();
  let server: Deno.HttpServer;
  try {
    server = Deno.serve({
      hostname: webhook.host,
      port: webhook.port,
      onListen: (address) => listening.resolve(address),
      onError: () => new Response(JSON.stringify({ error: "internal error" }), { status: 500 }),
    }, app.fetch);
  } catch (error) {
    stopping = true;
    clearInterval(pruneTimer);
    clearInterval(refusalWindows);
    await stateWatch.stop();
    await store.close();
    stateLock.close();
    throw error;
  }
  // Bound to the port: only now may the worker take over events left running (a gateway that
  // cannot listen must not touch them). Their agent programs, if a gateway that died left them
  // running, go first: the worker is about to run those events again.
  const leftovers = killLeftoverAgents(agentsDir);
  if (leftovers.length > 0) {
    workerLog.warn("killed agent commands a gateway that died left running: {pids}", {
      pids: leftovers.join(","),
    });
  }
  worker.start();
  server.finished.catch((error) =>
    failed.resolve(
      new Error(
        `The HTTP server stopped accepting connections (${
          error instanceof Error ? error.message : error
        }). Exiting so that a supervisor restarts the gateway; queued events are kept. Too ` +
          "many open connections is the usual cause: see Security in the README.",
      ),
    )
  );
  const address = await listening.promise;
  const host = address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname;
  const url = `http://${host}:${address.port}`;
  // Best effort: a disk too full for these few bytes must not stop a gateway that listens.
  await recordGatewayUrl(stateLock, address).catch((error) =>
    workerLog.warn("cannot write where the gateway listens into gateway.lock: {reason}", {
      reason: (error as Error).message,
    })
  );
  options.onListen?.(url);

  return {
    url,
    port: address.port,
    store,
    failed: failed.promise,
    async stop({ deadlineMs = STOP_DEADLINE_MS, hurry } = {}) {
      stopping = true;
      clearInterval(pruneTimer);
      await stateWatch.stop();
      // Both at once, within the same deadline: the worker stops claiming now, so the events
      // accepted meanwhile, and those queued, wait for the next start instead of being started
      // while the server drains and cut off at the deadline. shutdown() waits for every
      // connection to close, and a sender that stalls in the middle of a body keeps its
      // connection open: past the deadline the stop goes on without it (the process exits
      // after this, which closes it).
      await Promise.all([
        settledWithin(server.shutdown(), deadlineMs, { signal: hurry }),
        worker.stop({ deadlineMs, hurry }),
      ]);
      clearInterval(refusalWindows);
      refusals.flush();
      // Direct deliveries whose record the database refused: written now if it takes them.
      const unrecorded = await heldDirect.flush();
      heldDirect.stop();
      if (unrecorded > 0) {
        workerLog.error("stopped with {count} direct deliveries not recorded", {
          count: unrecorded,
        });
      }
      await store.close();
      stateLock.close();
    },
  };
}
