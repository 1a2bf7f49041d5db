/**
 * The running gateway's worker, which also sends direct-delivery messages for the HTTP side,
 * and the delivery targets' context.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { dirname, join } from "node:path";
import { agentProcessNotes, createAgentRunner } from "../lib/agents/mod.ts";
import type { Config } from "../lib/config/mod.ts";
import { systemPromptFor } from "../lib/agents/skills.ts";
import type { StateStore } from "../lib/state/mod.ts";
import { deliver, TARGET_NAMES, type TargetContext } from "../lib/targets/mod.ts";
import {
  type MetricsRecorder,
  NO_METRICS,
  timeAgentRuns,
  timeDeliveries,
} from "../lib/metrics/mod.ts";
import { createWorker, type EventWorker } from "../lib/worker/mod.ts";

const workerLog = getLogger(["agent", "worker"]);
const targetLog = getLogger(["agent", "target"]);

/** The longest wait for a platform's rate limit while a direct message's sender waits, in ms. */
const SENDER_RATE_LIMIT_WAIT_MS = 10_000;

/** The worker, and what the HTTP side shares with it. */
export interface WorkerSetup {
  /** The worker, not started yet. */
  worker: EventWorker;
  /** The delivery targets' context: env, fetch, sleep, log, home target. */
  targets: TargetContext;
  /** Where running `command` agents are noted (`killLeftoverAgents` reads it at start). */
  agentsDir: string;
}

/**
 * Builds the worker of a gateway, with its agent runner and targets.
 * @param config the merged configuration
 * @param options `store`: the state database; `fetch` for the outbound calls; `sleep`: waits out
 *   platform rate limits (@default {a timer}); `now`: the clock, in ms since the epoch;
 *   `steadyClock`: whether `now` is the system clock, which the worker checks against a steady
 *   one for steps (a clock a test gives is not); `metrics`: told of each agent run, delivery
 *   and event outcome (@default {NO_METRICS})
 * @returns the worker, not started, and what it shares with the HTTP side
 */
export function setUpWorker(config: Config, options: {
  store: StateStore;
  fetch: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  now: () => number;
  steadyClock: boolean;
  metrics?: MetricsRecorder;
}): WorkerSetup {
  const { store, now, metrics = NO_METRICS } = options;
  const { agent, paths } = config;
  const targets: TargetContext = {
    env: config.env,
    fetch: options.fetch,
    sleep: options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    log: (message, properties) => targetLog.info(message, properties),
    homeTarget: config.webhook.homeTarget,
  };
  // Where running `command` agents are noted, for the next start to kill if this gateway dies.
  const agentsDir = join(dirname(paths.stateDb), "agents");
  const processNotes = agentProcessNotes(agentsDir);
  const worker = createWorker({
    store,
    runAgent: timeAgentRuns(
      createAgentRunner(agent, {
        fetch: options.fetch,
        env: config.env,
        processNotes,
        warn: (message, properties) => workerLog.warn(message, properties),
      }),
      metrics,
    ),
    // A sender waiting for its direct message waits out a platform's rate limit only so long.
    deliver: timeDeliveries(
      (job, onPartSent, { senderWaits } = {}) =>
        deliver(
          job,
          senderWaits ? { ...targets, maxRateLimitWaitMs: SENDER_RATE_LIMIT_WAIT_MS } : targets,
          onPartSent,
        ),
      { metrics, targets: TARGET_NAMES },
    ),
    metrics,
    systemPrompt: (skills) => systemPromptFor(paths.skills, skills),
    now,
    // The system clock is checked against a steady one; a clock a test gives is not.
    monotonicNow: options.steadyClock ? () => performance.now() : undefined,
    random: Math.random,
    maxConcurrency: agent.maxConcurrency,
    silentMarker: agent.silentMarker,
    retry: agent.retry,
    log: (level, message, properties) => workerLog[level](message, properties),
    idempotencyTtlSeconds: config.webhook.idempotencyTtlSeconds,
  });
  return { worker, targets, agentsDir };
}
