/**
 * The running gateway's worker and what it shares with the HTTP side: the delivery targets, the
 * direct deliveries under way, and the records of direct deliveries the database refused, held
 * until it takes them.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { dirname, join } from "node:path";
import { agentProcessNotes, createAgentRunner } from "../lib/agents/mod.ts";
import type { Config } from "../lib/config/mod.ts";
import { systemPromptFor } from "../lib/agents/skills.ts";
import type { StateStore } from "../lib/state/mod.ts";
import { deliver, type TargetContext } from "../lib/targets/mod.ts";
import { createWorker, type EventWorker, STORE_REFUSED_RETRY_MS } from "../lib/worker/mod.ts";
import { createHeldDirectRecords, deliveryKey, type HeldDirectRecords } from "./ingest/mod.ts";

const workerLog = getLogger(["agent", "worker"]);
const targetLog = getLogger(["agent", "target"]);

/** The worker, and what the HTTP side shares with it. */
export interface WorkerSetup {
  /** The worker, not started yet. */
  worker: EventWorker;
  /** The delivery targets' context: env, fetch, sleep, log, home target. */
  targets: TargetContext;
  /** Direct deliveries under way (`IngestDeps.directInFlight`). */
  directInFlight: Set<string>;
  /** Direct deliveries whose record the store refused (`IngestDeps.heldDirect`). */
  heldDirect: HeldDirectRecords;
  /** Where running `command` agents are noted (`killLeftoverAgents` reads it at start). */
  agentsDir: string;
}

/**
 * Builds the worker of a gateway, with its agent runner and targets.
 * @param config the merged configuration
 * @param options `store`: the state database; `fetch` for the outbound calls; `sleep`: waits out
 *   platform rate limits (@default {a timer}); `now`: the clock, in ms since the epoch;
 *   `steadyClock`: whether `now` is the system clock, which the worker checks against a steady
 *   one for steps (a clock a test gives is not)
 * @returns the worker, not started, and what it shares with the HTTP side
 */
export function setUpWorker(config: Config, options: {
  store: StateStore;
  fetch: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  now: () => number;
  steadyClock: boolean;
}): WorkerSetup {
  const { store, now } = options;
  const { agent, paths } = config;
  const targets: TargetContext = {
    env: config.env,
    fetch: options.fetch,
    sleep: options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    log: (message, properties) => targetLog.info(message, properties),
    homeTarget: config.webhook.homeTarget,
  };
  // Direct deliveries under way, shared by the HTTP side and the worker (IngestDeps.directInFlight).
  const directInFlight = new Set<string>();
  // Where running `command` agents are noted, for the next start to kill if this gateway dies.
  const agentsDir = join(dirname(paths.stateDb), "agents");
  const processNotes = agentProcessNotes(agentsDir);
  const heldDirect = holdDirectRecords(store, config.webhook.idempotencyTtlSeconds);
  const worker = createWorker({
    store,
    runAgent: createAgentRunner(agent, {
      fetch: options.fetch,
      env: config.env,
      processNotes,
      warn: (message, properties) => workerLog.warn(message, properties),
    }),
    deliver: (job, onPartSent) => deliver(job, targets, onPartSent),
    systemPrompt: (skills) => systemPromptFor(paths.skills, skills),
    now,
    // The system clock is checked against a steady one; a clock a test gives is not.
    monotonicNow: options.steadyClock ? () => performance.now() : undefined,
    random: Math.random,
    maxConcurrency: agent.maxConcurrency,
    retry: agent.retry,
    log: (level, message, properties) => workerLog[level](message, properties),
    // Being sent, or delivered with its record held: a replay waits for the record, then finds
    // that the message went out.
    isBeingSent: (subscription, deliveryId) =>
      directInFlight.has(deliveryKey(subscription, deliveryId)) ||
      heldDirect.delivered(subscription, deliveryId, now()),
  });
  return { worker, targets, directInFlight, heldDirect, agentsDir };
}

/** The held records of direct deliveries, kept as long as their idempotency keys (seconds). */
function holdDirectRecords(store: StateStore, idempotencyTtlSeconds: number): HeldDirectRecords {
  return createHeldDirectRecords(store, {
    retryMs: STORE_REFUSED_RETRY_MS,
    ttlMs: idempotencyTtlSeconds * 1000,
    onDropped: (event) =>
      workerLog.error(
        "direct delivery {delivery_id} of {subscription} not recorded: too many held",
        {
          subscription: event.subscription,
          delivery_id: event.deliveryId,
        },
      ),
  });
}
