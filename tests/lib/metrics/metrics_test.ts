/**
 * The gateway's metrics (docs/metrics.md) as a scrape reads them: the real `prom-client`
 * registry, a real SQLite store behind the queue's gauges, and the text read as Prometheus
 * reads it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  AGENT_RUN_BUCKETS_SECONDS,
  createGatewayMetrics,
  DELIVERY_BUCKETS_SECONDS,
  metricsHandler,
  timeAgentRuns,
  timeDeliveries,
  UNKNOWN,
} from "../../../lib/metrics/mod.ts";
import { openStateStore } from "../../../lib/state/sqlite/mod.ts";
import { TARGET_NAMES } from "../../../lib/targets/mod.ts";
import { newEvent } from "../state/_fixtures.ts";
import { type Exposition, readExposition } from "./_exposition.ts";

const T0 = 1_700_000_000_000;

/** A store in a temporary folder, removed with it. */
async function tempStore() {
  const dir = await Deno.makeTempDir({ prefix: "agent-metrics-" });
  const store = openStateStore(join(dir, "state", "gateway.db"), { backgroundCheckpoints: false });
  return {
    store,
    async [Symbol.asyncDispose]() {
      await store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** Scrapes through the handler `GET /metrics` serves, and reads the text. */
async function scrape(metrics: Parameters<typeof metricsHandler>[0]): Promise<Exposition> {
  const response = await metricsHandler(metrics)();
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type")!, /^text\/plain; version=0\.0\.4/);
  return readExposition(await response.text());
}

Deno.test("a scrape has every metric of docs/metrics.md with its type, and the process metrics", async () => {
  await using h = await tempStore();
  const scraped = await scrape(createGatewayMetrics({ store: h.store }));
  const expected: Record<string, string> = {
    agent_webhook_requests_total: "counter",
    agent_events_total: "counter",
    agent_events_queued: "gauge",
    agent_event_queue_oldest_age_seconds: "gauge",
    agent_agent_runs_in_flight: "gauge",
    agent_agent_run_duration_seconds: "histogram",
    agent_llm_tokens_total: "counter",
    agent_delivery_duration_seconds: "histogram",
    agent_delivery_failures_total: "counter",
    process_cpu_seconds_total: "counter",
    process_resident_memory_bytes: "gauge",
    process_open_fds: "gauge",
    process_start_time_seconds: "gauge",
    nodejs_heap_size_used_bytes: "gauge",
    nodejs_eventloop_lag_p99_seconds: "gauge",
  };
  for (const [name, type] of Object.entries(expected)) {
    assert.equal(scraped.types.get(name), type, name);
  }
  assert.ok(scraped.value("process_resident_memory_bytes")! > 1_000_000, "RSS is read");
  const started = scraped.value("process_start_time_seconds")!;
  assert.ok(Math.abs(started - Date.now() / 1000) < 3600, `start time ${started}`);
  // Deno fills no GC entries and lists no libuv handles: those would always read empty.
  assert.equal(scraped.types.get("nodejs_gc_duration_seconds"), undefined);
  assert.equal(scraped.types.get("nodejs_active_handles_total"), undefined);
});

Deno.test("requests to names the gateway does not serve count under one label", async () => {
  await using h = await tempStore();
  const metrics = createGatewayMetrics({ store: h.store, processMetrics: false });
  metrics.webhookRequest("gh", 202);
  metrics.webhookRequest("gh", 202);
  metrics.webhookRequest("gh", 401);
  for (let i = 0; i < 50; i++) metrics.webhookRequest(null, 404);
  const scraped = await scrape(metrics);
  const requests = scraped.series("agent_webhook_requests_total");
  assert.deepEqual(
    requests.map(({ labels, value }) => [labels.subscription, labels.status, value]),
    [["gh", "202", 2], ["gh", "401", 1], [UNKNOWN, "404", 50]],
  );
});

Deno.test("the histograms have their buckets, and count what was observed", async () => {
  await using h = await tempStore();
  const metrics = createGatewayMetrics({ store: h.store, processMetrics: false });
  metrics.agentRunStarted();
  metrics.agentRunEnded(3);
  metrics.delivery("telegram", { seconds: 0.07, failed: false });
  metrics.delivery("telegram", { seconds: 12, failed: true });
  const scraped = await scrape(metrics);
  const buckets = (name: string) =>
    scraped.series(`${name}_bucket`).map(({ labels, value }) => [labels.le, value]);
  assert.deepEqual(
    buckets("agent_agent_run_duration_seconds"),
    [...AGENT_RUN_BUCKETS_SECONDS.map((le) => [String(le), le >= 3 ? 1 : 0]), ["+Inf", 1]],
  );
  assert.deepEqual(
    buckets("agent_delivery_duration_seconds"),
    [
      ...DELIVERY_BUCKETS_SECONDS.map((
        le,
      ) => [String(le), (le >= 0.07 ? 1 : 0) + (le >= 12 ? 1 : 0)]),
      ["+Inf", 2],
    ],
  );
  assert.equal(scraped.value("agent_delivery_duration_seconds_sum", { target: "telegram" }), 12.07);
  assert.equal(scraped.value("agent_delivery_failures_total", { target: "telegram" }), 1);
  assert.equal(scraped.value("agent_agent_runs_in_flight"), 0);
});

Deno.test("the queue's gauges are read from the store at each scrape", async () => {
  await using h = await tempStore();
  const clock = { nowMs: T0 + 90_000 };
  const metrics = createGatewayMetrics({
    store: h.store,
    now: () => clock.nowMs,
    processMetrics: false,
  });
  let scraped = await scrape(metrics);
  assert.equal(scraped.value("agent_events_queued"), 0);
  assert.equal(scraped.value("agent_event_queue_oldest_age_seconds"), 0, "none waits");
  await h.store.accept(newEvent({ receivedAtMs: T0 }));
  await h.store.accept(newEvent({ receivedAtMs: T0 + 30_000 }));
  scraped = await scrape(metrics);
  assert.equal(scraped.value("agent_events_queued"), 2);
  assert.equal(scraped.value("agent_event_queue_oldest_age_seconds"), 90);
  clock.nowMs += 10_000;
  assert.equal((await scrape(metrics)).value("agent_event_queue_oldest_age_seconds"), 100);
});

Deno.test("a store that cannot be read leaves the queue's gauges NaN, and the scrape answered", async () => {
  await using h = await tempStore();
  const metrics = createGatewayMetrics({ store: h.store, processMetrics: false });
  metrics.webhookRequest("gh", 202);
  await h.store.close();
  const scraped = await scrape(metrics);
  assert.ok(Number.isNaN(scraped.value("agent_events_queued")));
  assert.ok(Number.isNaN(scraped.value("agent_event_queue_oldest_age_seconds")));
  assert.equal(
    scraped.value("agent_webhook_requests_total", { subscription: "gh", status: "202" }),
    1,
  );
});

Deno.test("tokens count by subscription and kind; a count that is not one is left out", async () => {
  await using h = await tempStore();
  const metrics = createGatewayMetrics({ store: h.store, processMetrics: false });
  metrics.llmTokens("gh", { promptTokens: 120, completionTokens: 30 });
  metrics.llmTokens("gh", { promptTokens: 80, completionTokens: 10 });
  metrics.llmTokens("gh", { promptTokens: NaN, completionTokens: -1 }); // not counted, no throw
  const scraped = await scrape(metrics);
  assert.equal(
    scraped.value("agent_llm_tokens_total", { subscription: "gh", kind: "prompt" }),
    200,
  );
  assert.equal(
    scraped.value("agent_llm_tokens_total", { subscription: "gh", kind: "completion" }),
    40,
  );
});

Deno.test("timeAgentRuns() counts a run in flight while it goes, and its time when it ends or fails", async () => {
  await using h = await tempStore();
  const metrics = createGatewayMetrics({ store: h.store, processMetrics: false });
  const clock = { ms: 0 };
  const release = Promise.withResolvers<string>();
  const run = timeAgentRuns((_: string) => release.promise, metrics, () => clock.ms);
  const going = run("prompt");
  assert.equal((await scrape(metrics)).value("agent_agent_runs_in_flight"), 1);
  clock.ms = 7_000;
  release.resolve("answer");
  assert.equal(await going, "answer");
  const failing = timeAgentRuns(() => Promise.reject(new Error("model down")), metrics, () => {
    clock.ms += 500;
    return clock.ms;
  });
  await assert.rejects(failing("prompt"), /model down/);
  const scraped = await scrape(metrics);
  assert.equal(scraped.value("agent_agent_runs_in_flight"), 0);
  assert.equal(scraped.value("agent_agent_run_duration_seconds_count"), 2);
  assert.equal(scraped.value("agent_agent_run_duration_seconds_sum"), 7.5);
});

Deno.test("timeDeliveries() times each delivery by the target that sent it; a name that is no target counts as (unknown)", async () => {
  await using h = await tempStore();
  const metrics = createGatewayMetrics({ store: h.store, processMetrics: false });
  const clock = { ms: 0 };
  const deliver = timeDeliveries(
    (job: { target: string }) => {
      clock.ms += 250;
      if (job.target === "slack") return Promise.reject(new Error("channel_not_found"));
      // origin resolves to the target that sends
      return Promise.resolve({ target: job.target === "origin" ? "github_comment" : job.target });
    },
    { metrics, targets: TARGET_NAMES, monotonicNow: () => clock.ms },
  );
  await deliver({ target: "origin" });
  await assert.rejects(deliver({ target: "slack" }), /channel_not_found/);
  await deliver({ target: "smoke-signals" });
  const scraped = await scrape(metrics);
  const counts = scraped.series("agent_delivery_duration_seconds_count")
    .map(({ labels, value }) => [labels.target, value]);
  assert.deepEqual(counts, [["github_comment", 1], ["slack", 1], [UNKNOWN, 1]]);
  assert.equal(scraped.value("agent_delivery_duration_seconds_sum", { target: "slack" }), 0.25);
  assert.equal(scraped.value("agent_delivery_failures_total", { target: "slack" }), 1);
  assert.equal(
    scraped.value("agent_delivery_failures_total", { target: "github_comment" }),
    undefined,
  );
});

Deno.test("a label value with a double quote, a backslash or a line feed is escaped in the scrape", async () => {
  await using h = await tempStore();
  const metrics = createGatewayMetrics({ store: h.store, processMetrics: false });
  const name = 'say "hi"\\\nbye';
  metrics.llmTokens(name, { promptTokens: 3, completionTokens: 1 });
  const scraped = await scrape(metrics);
  assert.equal(scraped.value("agent_llm_tokens_total", { subscription: name, kind: "prompt" }), 3);
});
