/**
 * The gateway's Prometheus metrics (docs/metrics.md): what the ingest pipeline, the worker, the
 * agent runs and the deliveries tell a {@link MetricsRecorder}, kept in memory and served in
 * the Prometheus text format, with `prom-client`'s process metrics, by the dashboard's
 * `GET /metrics` ({@link metricsHandler}).
 *
 * The parts that know tell the recorder as things happen: the webhook handler each answer, the
 * ingest pipeline and the worker each event's fate, and the wrappers of this module each agent
 * run and delivery ({@link timeAgentRuns}, {@link timeDeliveries}). The queue's gauges are read
 * from the state store when a scrape asks, never on the request path. A recorder costs the
 * ingest path a counter increment or two; {@link NO_METRICS}, the default, costs nothing.
 *
 * @module
 */
export {
  AGENT_RUN_BUCKETS_SECONDS,
  createGatewayMetrics,
  DELIVERY_BUCKETS_SECONDS,
  type GatewayMetrics,
  type GatewayMetricsOptions,
  type MetricsRegistry,
} from "./_registry.ts";
export { type MinuteCount, MINUTES_KEPT } from "./_minutes.ts";
export {
  type EventOutcome,
  type MetricsRecorder,
  NO_METRICS,
  type TokenUsage,
  UNKNOWN,
} from "./_recorder.ts";
import { type MetricsRecorder, UNKNOWN } from "./_recorder.ts";
import type { GatewayMetrics } from "./_registry.ts";

/**
 * Wraps an agent runner (`AgentRunner`) so that each run counts in `agent_agent_runs_in_flight`
 * while it goes and in `agent_agent_run_duration_seconds` when it ends, answered or failed.
 * @param runner the runner
 * @param metrics the recorder
 * @param monotonicNow a clock that is never set, in ms (@default {performance.now})
 * @returns the runner, timed
 */
export function timeAgentRuns<Request, Answer>(
  runner: (request: Request) => Promise<Answer>,
  metrics: MetricsRecorder,
  monotonicNow: () => number = () => performance.now(),
): (request: Request) => Promise<Answer> {
  return async (request) => {
    const startedMs = monotonicNow();
    metrics.agentRunStarted();
    try {
      return await runner(request);
    } finally {
      metrics.agentRunEnded((monotonicNow() - startedMs) / 1000);
    }
  };
}

/**
 * Wraps the worker's delivery (`DeliverFn`) so that each one counts in
 * `agent_delivery_duration_seconds`, and each failure in `agent_delivery_failures_total`, by
 * target: the one that sent (for `origin`, the one it resolved to), or the job's on a failure.
 * A name that is not in `targets` (a subscription file edited by hand) counts as
 * {@link UNKNOWN}.
 * @param deliver the delivery: a job naming its `target`, and what else it takes
 * @param options `metrics`: the recorder; `targets`: the names of the targets that exist
 *   (`TARGET_NAMES`); `monotonicNow`: a clock that is never set, in ms
 *   (@default {performance.now})
 * @returns the delivery, timed
 */
export function timeDeliveries<
  Job extends { target: string },
  Rest extends unknown[],
  Receipt extends { target: string },
>(
  deliver: (job: Job, ...rest: Rest) => Promise<Receipt>,
  options: { metrics: MetricsRecorder; targets: readonly string[]; monotonicNow?: () => number },
): (job: Job, ...rest: Rest) => Promise<Receipt> {
  const { metrics, targets, monotonicNow = () => performance.now() } = options;
  const label = (name: string) => targets.includes(name) ? name : UNKNOWN;
  return async (job, ...rest) => {
    const startedMs = monotonicNow();
    const seconds = () => (monotonicNow() - startedMs) / 1000;
    try {
      const receipt = await deliver(job, ...rest);
      metrics.delivery(label(receipt.target), { seconds: seconds(), failed: false });
      return receipt;
    } catch (error) {
      metrics.delivery(label(job.target), { seconds: seconds(), failed: true });
      throw error;
    }
  };
}

/**
 * The handler of `GET /metrics`: the registry in the Prometheus text format (version 0.0.4).
 * It does not check who asks: mount it behind the dashboard's session or bearer-token check
 * (docs/metrics.md). A state database that cannot be read leaves the queue's gauges NaN; the
 * scrape is answered all the same.
 * @param metrics the gateway's metrics (see {@link createGatewayMetrics})
 * @returns a handler answering 200 with the text
 * @example
 * ```ts
 * app.get("/metrics", requireSession(auth, { bearer: true, refuse }), metricsHandler(metrics));
 * ```
 */
export function metricsHandler(
  metrics: Pick<GatewayMetrics, "registry">,
): () => Promise<Response> {
  const { registry } = metrics;
  return async () =>
    new Response(await registry.metrics(), {
      headers: { "content-type": registry.contentType, "cache-control": "no-store" },
    });
}
