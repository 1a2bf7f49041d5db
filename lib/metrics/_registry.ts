/**
 * The gateway's metrics: the counters and histograms its recorder feeds, the queue's gauges read
 * from the state store at each scrape, and the process metrics of `prom-client`'s
 * `collectDefaultMetrics` (https://github.com/siimon/prom-client). docs/metrics.md lists them.
 *
 * `prom-client` is loaded at the first scrape, not when the gateway starts: a gateway nobody
 * scrapes does not hold it in memory. The gateway's own metrics are kept meanwhile in
 * `_families.ts`.
 *
 * @module
 */
import type { Registry } from "prom-client";
import { StoreUnavailableError } from "../errors.ts";
import { type Family, HistogramFamily, NumberFamily } from "./_families.ts";
import type { QueueStats } from "../state/mod.ts";
import { type MinuteCount, MinuteRing } from "./_minutes.ts";
import { type EventOutcome, type MetricsRecorder, type TokenUsage, UNKNOWN } from "./_recorder.ts";

/**
 * The buckets of `agent_agent_run_duration_seconds`, in seconds: a model answers in seconds
 * to minutes, and a run is stopped at `agent.timeout` (300 s by default).
 */
export const AGENT_RUN_BUCKETS_SECONDS = [0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300];

/**
 * The buckets of `agent_delivery_duration_seconds`, in seconds: a chat API answers in tens of
 * milliseconds, but a long message goes out in parts, and a platform's rate limit is waited
 * out for up to 30 s.
 */
export const DELIVERY_BUCKETS_SECONDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * Process metrics that `collectDefaultMetrics` registers but Deno never fills: it has no GC
 * performance entries and no libuv handles or requests to list, so these would always read
 * empty or 0.
 */
const EMPTY_UNDER_DENO = [
  "nodejs_gc_duration_seconds",
  "nodejs_active_handles",
  "nodejs_active_handles_total",
  "nodejs_active_requests",
  "nodejs_active_requests_total",
];

/** What `GET /metrics` serves: the text of every metric, and its content type. */
export interface MetricsRegistry {
  /** The Prometheus text format's content type, version 0.0.4. */
  readonly contentType: string;
  /** Every metric in the text format; the first call loads `prom-client` for the process's. */
  metrics(): Promise<string>;
}

/** The gateway's recorder, and the registry `GET /metrics` serves. */
export interface GatewayMetrics extends MetricsRecorder {
  /** The registry: `registry.metrics()` is the text a scrape gets. */
  readonly registry: MetricsRegistry;
  /**
   * Requests to `/webhooks/<name>` refused (answered 400 or more) in each minute since
   * `sinceMs`, for the dashboard's overview: kept in memory for the last 24 h only.
   * @param sinceMs the first minute wanted, in ms since the epoch
   * @returns the minutes that had any, oldest first
   */
  refusedPerMinute(sinceMs: number): MinuteCount[];
  /** Agent runs going on now (`agent_agent_runs_in_flight`). */
  agentRunsInFlight(): number;
}

/** What {@link createGatewayMetrics} reads. */
export interface GatewayMetricsOptions {
  /** Where the queue's gauges are read at each scrape. */
  store: { queueStats(): Promise<QueueStats> };
  /** The clock the queue's oldest age is counted against, in ms since the epoch. @default Date.now */
  now?: () => number;
  /** Whether to register the process metrics (`process_*`, `nodejs_*`). @default {true} */
  processMetrics?: boolean;
}

/**
 * Creates the gateway's metrics, all at zero, in a registry of their own.
 * @param options the store the queue's gauges read, the clock, and whether to add the process
 *   metrics
 * @returns the recorder, with its registry
 * @example
 * ```ts
 * const metrics = createGatewayMetrics({ store });
 * metrics.webhookRequest("github", 202);
 * const text = await metrics.registry.metrics(); // agent_webhook_requests_total{...} 1
 * ```
 */
export function createGatewayMetrics(options: GatewayMetricsOptions): GatewayMetrics {
  const queue = queueGauges(options);
  const families: Family[] = queue.families;
  const { requests, events, inFlight, runs, tokens, deliveries, deliveryFailures } = collectors(
    families,
  );
  const refused = new MinuteRing();
  const now = options.now ?? Date.now;
  let running = 0;
  const processMetrics = options.processMetrics ?? true;
  let processRegistry: Promise<Registry> | undefined;
  const registry: MetricsRegistry = {
    contentType: "text/plain; version=0.0.4; charset=utf-8",
    async metrics() {
      await queue.read();
      const own = families.map((family) => family.text()).join("\n");
      if (!processMetrics) return own;
      processRegistry ??= loadProcessMetrics();
      return `${own}\n${await (await processRegistry).metrics()}`;
    },
  };
  return {
    registry,
    webhookRequest(subscription: string | null, status: number) {
      requests.inc({ subscription: subscription ?? UNKNOWN, status: String(status) });
      if (status >= 400) refused.add(now());
    },
    event(subscription: string, outcome: EventOutcome) {
      events.inc({ subscription, status: outcome });
    },
    refusedPerMinute: (sinceMs: number) => refused.since(sinceMs),
    agentRunsInFlight: () => running,
    agentRunStarted() {
      running++;
      inFlight.inc();
    },
    agentRunEnded(seconds: number) {
      running--;
      inFlight.inc({}, -1);
      runs.observe({}, seconds);
    },
    llmTokens(subscription: string, { promptTokens, completionTokens }: TokenUsage) {
      // A count that is not a finite number of at least 0 would make the counter meaningless.
      const count = (kind: string, value: number) => {
        if (Number.isFinite(value) && value >= 0) tokens.inc({ subscription, kind }, value);
      };
      count("prompt", promptTokens);
      count("completion", completionTokens);
    },
    delivery(target: string, { seconds, failed }: { seconds: number; failed: boolean }) {
      deliveries.observe({ target }, seconds);
      if (failed) deliveryFailures.inc({ target });
    },
  };
}

/** A registry of `prom-client`'s process metrics, loaded and started now. */
async function loadProcessMetrics(): Promise<Registry> {
  const { collectDefaultMetrics, Registry } = await import("prom-client");
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  for (const name of EMPTY_UNDER_DENO) registry.removeSingleMetric(name);
  return registry;
}

/**
 * `agent_events_queued` and `agent_event_queue_oldest_age_seconds`, read from the store once
 * per scrape (`read`, before the families' text). A store that cannot be read now leaves both
 * NaN for this scrape rather than failing it: the other metrics still tell what is going on.
 */
function queueGauges(
  options: GatewayMetricsOptions,
): { families: Family[]; read: () => Promise<void> } {
  const { store, now = Date.now } = options;
  let stats: QueueStats | null = null;
  const read = async (): Promise<void> => {
    try {
      stats = await store.queueStats();
    } catch (error) {
      stats = null;
      if (!(error instanceof StoreUnavailableError)) throw error;
    }
  };
  const queued = new NumberFamily({
    name: "agent_events_queued",
    help: "Events waiting in the queue: for their first attempt, a retry, or a replay's run.",
    type: "gauge",
    collect(set) {
      set(stats?.queued ?? NaN);
    },
  });
  const oldestAge = new NumberFamily({
    name: "agent_event_queue_oldest_age_seconds",
    help: "How long the longest-waiting queued event has waited since it was accepted (or " +
      "replayed); 0 when none waits.",
    type: "gauge",
    collect(set) {
      const oldest = stats?.oldestQueuedAtMs;
      if (stats === null) set(NaN);
      else set(oldest === null ? 0 : Math.max(0, (now() - oldest!) / 1000));
    },
  });
  return { families: [queued, oldestAge], read };
}

/** The gateway's metrics, added to `families` (the queue's gauges apart). */
function collectors(families: Family[]) {
  const counter = (name: string, help: string, labelNames: readonly string[]) =>
    new NumberFamily({ name, help, type: "counter", labelNames });
  const requests = counter(
    "agent_webhook_requests_total",
    "Requests to /webhooks/<name>, by subscription and HTTP status of the answer.",
    ["subscription", "status"],
  );
  const events = counter(
    "agent_events_total",
    "Events by subscription and what became of them: accepted, duplicate, ignored, " +
      "delivered, failed.",
    ["subscription", "status"],
  );
  const inFlight = new NumberFamily({
    name: "agent_agent_runs_in_flight",
    help: "Agent runs going on now.",
    type: "gauge",
  });
  const runs = new HistogramFamily({
    name: "agent_agent_run_duration_seconds",
    help: "How long agent runs took, answered or failed.",
    bounds: AGENT_RUN_BUCKETS_SECONDS,
  });
  const tokens = counter(
    "agent_llm_tokens_total",
    "LLM tokens of agent runs, by subscription and kind: prompt or completion.",
    ["subscription", "kind"],
  );
  const deliveries = new HistogramFamily({
    name: "agent_delivery_duration_seconds",
    help: "How long deliveries took, every part of a message, by target.",
    labelNames: ["target"],
    bounds: DELIVERY_BUCKETS_SECONDS,
  });
  const deliveryFailures = counter(
    "agent_delivery_failures_total",
    "Deliveries that failed (each attempt), by target.",
    ["target"],
  );
  families.push(requests, events, inFlight, runs, tokens, deliveries, deliveryFailures);
  return { requests, events, inFlight, runs, tokens, deliveries, deliveryFailures };
}
