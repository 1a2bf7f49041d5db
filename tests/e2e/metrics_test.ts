/**
 * End to end: `GET /metrics` on the dashboard listener of the real `main.ts gateway run`,
 * scraped as Prometheus scrapes it (the token of `agent dashboard --token` as a bearer header),
 * after a known sequence of requests signed by `@octokit/webhooks-methods`, with loopback
 * servers playing Telegram and the LLM.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { updateSubscriptions } from "../../lib/subscriptions/file_store.ts";
import { startFakeTelegram } from "../fakes/chat_servers.ts";
import { githubExample } from "../fakes/github_examples.ts";
import { startFakeLlm } from "../fakes/llm_server.ts";
import { type Exposition, readExposition } from "../lib/metrics/_exposition.ts";
import { eventually, runCli, signedGitHub, startGatewayProcess, tempHome } from "../_helpers.ts";

const SECRET = "metrics-test-secret-0123456789";

Deno.test("/metrics counts what a known sequence of requests became, by subscription, and no made-up name", async () => {
  await using h = await tempHome();
  await using telegram = startFakeTelegram({ known: ["4242", "777"] });
  const llm = await startFakeLlm();
  await using _llm = { [Symbol.asyncDispose]: () => llm.close() };
  const chat = (id: string) => ({ deliver: "telegram", deliver_extra: { chat_id: id } });
  await updateSubscriptions(join(h.home, "webhook_subscriptions.json"), (records) => {
    records.gh = { secret: SECRET, events: ["issues"], ...chat("4242") };
    records["gh-lost"] = { secret: SECRET, ...chat("999") }; // Telegram: chat not found
    records["gh-direct"] = {
      secret: SECRET,
      deliver_only: true,
      prompt: "{issue.title}",
      ...chat("777"),
    };
  });
  const env = { AGENT_HOME: h.home, ...telegram.env, ...llm.env };
  await using gateway = await startGatewayProcess(env);
  const dashboard = gateway.output().match(/dashboard: (http:\/\/\S+)/)![1];
  const tokenRun = await runCli(["dashboard", "--token"], env);
  assert.equal(tokenRun.code, 0, tokenRun.stderr);
  const token = tokenRun.stdout.trim();

  const issue = githubExample("issues", "opened");
  const post = async (name: string, init: RequestInit | Promise<RequestInit>) => {
    const response = await fetch(`${gateway.url}/webhooks/${name}`, await init);
    await response.body?.cancel();
    return response.status;
  };
  const signed = (options: { event?: string; delivery?: string; secret?: string } = {}) =>
    signedGitHub(options.secret ?? SECRET, issue, { event: "issues", ...options });
  const delivery = crypto.randomUUID();
  assert.equal(await post("gh", signed({ delivery })), 202, "accepted");
  assert.equal(await post("gh", signed({ secret: "not-the-secret-0123456789" })), 401);
  assert.equal(await post("gh", signed({ delivery })), 200, "duplicate");
  assert.equal(await post("gh", signed({ event: "push" })), 200, "ignored by the filter");
  assert.equal(await post("gh", { method: "GET" }), 405);
  assert.equal(await post("gh-lost", signed()), 202, "accepted, then failed for good");
  assert.equal(await post("gh-direct", signed()), 200, "delivered while the sender waits");
  telegram.failNext(1, { status: 500 });
  assert.equal(await post("gh-direct", signed()), 502, "failed while the sender waits");
  for (const name of ["nope", `attacker-${crypto.randomUUID()}`, "x".repeat(300)]) {
    assert.equal(await post(name, signed()), 404);
  }

  const scrape = async (headers: Record<string, string>) => {
    const response = await fetch(`${dashboard}/metrics`, { headers });
    return { status: response.status, text: await response.text() };
  };
  assert.equal((await scrape({})).status, 401, "no token, no metrics");
  assert.equal((await scrape({ authorization: `Bearer ${token}x` })).status, 401);
  const metrics = await eventually(async () => {
    const { status, text } = await scrape({ authorization: `Bearer ${token}` });
    assert.equal(status, 200, text);
    const read = readExposition(text);
    const ended = read.value("agent_events_total", { subscription: "gh", status: "delivered" }) &&
      read.value("agent_events_total", { subscription: "gh-lost", status: "failed" });
    return ended ? read : undefined;
  }, { what: "the worker to end both events" });

  assert.deepEqual(counts(metrics, "agent_webhook_requests_total"), {
    "gh 202": 1,
    "gh 401": 1,
    "gh 200": 2,
    "gh 405": 1,
    "gh-lost 202": 1,
    "gh-direct 200": 1,
    "gh-direct 502": 1,
    "(unknown) 404": 3,
  });
  assert.deepEqual(counts(metrics, "agent_events_total"), {
    "gh accepted": 1,
    "gh duplicate": 1,
    "gh ignored": 1,
    "gh delivered": 1,
    "gh-lost accepted": 1,
    "gh-lost failed": 1,
    "gh-direct delivered": 1,
    "gh-direct failed": 1,
  });
  assert.equal(metrics.value("agent_events_queued"), 0);
  assert.equal(metrics.value("agent_event_queue_oldest_age_seconds"), 0);
  assert.equal(metrics.value("agent_agent_runs_in_flight"), 0);
  assert.equal(metrics.value("agent_agent_run_duration_seconds_count"), 2);
  assert.ok(metrics.series("agent_agent_run_duration_seconds_bucket").length > 5, "buckets");
  const telegramLabel = { target: "telegram" };
  assert.equal(metrics.value("agent_delivery_duration_seconds_count", telegramLabel), 4);
  assert.equal(metrics.value("agent_delivery_failures_total", telegramLabel), 2);
  assert.ok(
    metrics.series("agent_delivery_duration_seconds_bucket")
      .some(({ labels }) => labels.target === "telegram" && labels.le === "+Inf"),
  );
  // The fake LLM's usage, as the endpoint reported it for the two runs.
  for (const kind of ["prompt", "completion"] as const) {
    const reported = llm.requests.reduce((sum, { usage }) => sum + usage![`${kind}_tokens`], 0);
    const counted = ["gh", "gh-lost"].map((subscription) =>
      metrics.value("agent_llm_tokens_total", { subscription, kind })!
    );
    assert.ok(counted.every((tokens) => tokens > 0), `${kind} tokens of each subscription`);
    assert.equal(counted[0] + counted[1], reported, `${kind} tokens`);
  }
  assert.ok(metrics.value("process_resident_memory_bytes")! > 0);
});

/** A counter's samples as `"<first label> <second label>": value`. */
function counts(metrics: Exposition, name: string): Record<string, number> {
  return Object.fromEntries(
    metrics.series(name).map(({ labels, value }) => [Object.values(labels).join(" "), value]),
  );
}
