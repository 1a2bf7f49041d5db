/**
 * Rejected requests against the real gateway: are they served at least as fast as accepted
 * ones, and do they stay out of the state database? Starts `startGateway` on a loopback port
 * in a temporary home (one subscription, rate limit 10^9, file logging on, as `gateway run`
 * does) and loads it with four kinds of POST carrying a real GitHub `push` payload:
 * (a) a valid signature (202), (b) a wrong one (401), (c) none (401), (d) an unknown
 * subscription (404).
 *
 * Load comes from `wrk` (one thread, 32 connections, a Lua script that gives every request a
 * fresh `X-GitHub-Delivery`) when it is installed, else from 32 in-process `fetch` loops, which
 * share the gateway's thread and so lower every rate alike. Cases are interleaved over rounds
 * and each case's median round is reported. The database is checked after every round
 * (rejections add no event; accepted requests add one each) and at the end by a fixed-count
 * pass with exact accounting. The agent endpoint never answers, so the worker stays idle.
 *
 * Run: `deno run -A bench/rejections.ts` (about 50 s; loopback only; stops by itself).
 *
 * @module
 */
import examples from "@octokit/webhooks-examples" with { type: "json" };
import { sign } from "@octokit/webhooks-methods";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { loadConfig } from "../lib/config/mod.ts";
import { startLogging, stopLogging } from "../lib/log.ts";
import { startGateway } from "../server/gateway.ts";
import { median } from "./_median.ts";

/** Seconds each case is loaded in each round. */
const CASE_SECONDS = 3;
/** Rounds over all cases; each case's median round is reported. */
const ROUNDS = 3;
/** Unmeasured seconds per case first, so that JIT and caches are warm. */
const WARMUP_SECONDS = 1;
/** Concurrent connections (wrk) or request loops (fetch). */
const CONNECTIONS = 32;
/** Requests per case in the final exact-accounting pass. */
const CHECK_COUNT = 2_000;

const SECRET = "bench-secret-0123456789abcdefghijklmnopqrstuv";

type Bytes = Uint8Array<ArrayBuffer>;

/** One kind of request and the status every one of them must get. */
interface Case {
  key: string;
  label: string;
  path: string;
  headers: Record<string, string>;
  expected: number;
}

/** What one load run measured. */
interface Sample {
  requests: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses by status code. */
  statuses: Record<string, number>;
  /** Requests sent but not answered when the run ended (wrk abandons them). */
  unanswered: number;
  /** Socket errors: connect, read, write, timeout. */
  errors: number;
}

/** The wrk script: a fresh delivery id per request, responses counted by status. */
const WRK_SCRIPT = `
local f = assert(io.open(os.getenv("BENCH_BODY_FILE"), "rb"))
wrk.method, wrk.body = "POST", f:read("*a")
f:close()
for name, value in string.gmatch(os.getenv("BENCH_HEADERS"), "([^\\n:]+):([^\\n]*)") do
  wrk.headers[name] = value
end
-- sent and statuses are globals: thread:get() reads a thread's globals.
local threads, run = {}, os.getenv("BENCH_RUN")
sent, statuses = 0, {}
function setup(thread) thread:set("tid", #threads + 1); table.insert(threads, thread) end
function request()
  sent = sent + 1
  wrk.headers["X-GitHub-Delivery"] = run .. "-" .. tid .. "-" .. sent
  return wrk.format()
end
function response(status) statuses[status] = (statuses[status] or 0) + 1 end
function done(summary, latency)
  local total_sent, parts = 0, {}
  local merged = {}
  for _, thread in ipairs(threads) do
    total_sent = total_sent + thread:get("sent")
    for code, n in pairs(thread:get("statuses")) do merged[code] = (merged[code] or 0) + n end
  end
  for code, n in pairs(merged) do table.insert(parts, string.format('"%d":%d', code, n)) end
  local e = summary.errors
  io.write(string.format('BENCH {"requests":%d,"sent":%d,"us":%d,"p50":%d,"p99":%d,' ..
    '"errors":%d,"statuses":{%s}}\\n', summary.requests, total_sent, summary.duration,
    latency:percentile(50), latency:percentile(99), e.connect + e.read + e.write + e.timeout,
    table.concat(parts, ",")))
end
`;

/** Paths of the wrk script and the request body, written once per run. */
interface BenchFiles {
  script: string;
  body: string;
}

/** One wrk run of `seconds` against `url + bench.path`. */
async function runWrk(
  url: string,
  bench: Case,
  options: { seconds: number; files: BenchFiles },
): Promise<Sample> {
  const { seconds, files } = options;
  const headers = Object.entries(bench.headers).map(([k, v]) => `${k}:${v}`).join("\n");
  const output = await new Deno.Command("wrk", {
    args: ["-t1", `-c${CONNECTIONS}`, `-d${seconds}s`, "--timeout", "5s", "-s", files.script]
      .concat(url + bench.path),
    env: { BENCH_BODY_FILE: files.body, BENCH_HEADERS: headers, BENCH_RUN: crypto.randomUUID() },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  const line = decoder.decode(output.stdout).split("\n").find((l) => l.startsWith("BENCH "));
  if (!output.success || !line) throw new Error(`wrk failed: ${decoder.decode(output.stderr)}`);
  const r = JSON.parse(line.slice("BENCH ".length));
  return {
    requests: r.requests,
    seconds: r.us / 1e6,
    p50Ms: r.p50 / 1000,
    p99Ms: r.p99 / 1000,
    statuses: r.statuses,
    unanswered: r.sent - r.requests,
    errors: r.errors,
  };
}

/**
 * `CONNECTIONS` concurrent fetch loops until `seconds` pass or `count` requests are sent;
 * every request is awaited, so the accounting is exact.
 */
async function runFetch(
  url: string,
  bench: Case,
  options: { seconds?: number; count?: number; body: Bytes },
): Promise<Sample> {
  const { seconds = Infinity, count = Infinity, body } = options;
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const run = crypto.randomUUID();
  const started = performance.now();
  const deadline = started + seconds * 1000;
  let sent = 0;
  // A client of its own, closed at the end, so no idle keep-alive connection delays stop().
  using client = Deno.createHttpClient({});
  const loop = async () => {
    while (sent < count && performance.now() < deadline) {
      const delivery = `${run}-${sent++}`;
      const t0 = performance.now();
      const response = await fetch(url + bench.path, {
        method: "POST",
        headers: { ...bench.headers, "x-github-delivery": delivery },
        body,
        client,
      });
      await response.body?.cancel();
      latencies.push(performance.now() - t0);
      statuses[response.status] = (statuses[response.status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, loop));
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return {
    requests: latencies.length,
    seconds: (performance.now() - started) / 1000,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    statuses,
    unanswered: 0,
    errors: 0,
  };
}

/** Counts stored events, after in-flight requests that wrk abandoned have settled. */
async function settledEventCount(db: DatabaseSync): Promise<number> {
  const count = () => (db.prepare("SELECT count(*) AS n FROM events").get() as { n: number }).n;
  let last = count();
  while (true) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = count();
    if (now === last) return now;
    last = now;
  }
}

/** Throws unless every answered request got the case's status. */
function assertStatuses(bench: Case, sample: Sample): void {
  const wrong = Object.entries(sample.statuses).filter(([code]) => Number(code) !== bench.expected);
  if (wrong.length > 0 || sample.requests === 0 || sample.errors > 0) {
    throw new Error(
      `${bench.label}: expected only ${bench.expected}, got ${JSON.stringify(sample.statuses)}` +
        ` and ${sample.errors} socket errors`,
    );
  }
}

/** Checks what a run did to the database: one event per accepted request, none otherwise. */
function assertStored(bench: Case, sample: Sample, added: number): void {
  const accepted = sample.statuses["202"] ?? 0;
  const ok = bench.expected === 202
    ? added >= accepted && added <= accepted + sample.unanswered
    : added === 0;
  if (!ok) {
    throw new Error(
      `${bench.label}: ${added} events stored for ${accepted} accepted (${sample.unanswered} unanswered)`,
    );
  }
}

async function setUp(home: string) {
  const push = (examples as unknown as { name: string; examples: unknown[] }[])
    .find((d) => d.name === "push")!.examples[0];
  const body = JSON.stringify(push);
  await Deno.writeTextFile(
    join(home, "config.yaml"),
    "platforms:\n  webhook:\n    enabled: true\n    extra: {host: 127.0.0.1, port: 0}\n" +
      // The agent's fetch is silentAgent; the base URL stays on loopback regardless.
      "agent: {provider: openai, model: bench, base_url: 'http://127.0.0.1:9/v1', timeout_seconds: 1}\n",
  );
  await Deno.writeTextFile(
    join(home, "webhook_subscriptions.json"),
    JSON.stringify({
      gh: { secret: SECRET, rate_limit: 1e9, prompt: "Push to {repository.full_name}" },
    }),
  );
  const files = { script: join(home, "bench.lua"), body: join(home, "body.json") };
  await Deno.writeTextFile(files.script, WRK_SCRIPT);
  await Deno.writeTextFile(files.body, body);
  const common = { "content-type": "application/json", "x-github-event": "push" };
  const valid = { ...common, "x-hub-signature-256": await sign(SECRET, body) };
  const wrong = { ...common, "x-hub-signature-256": await sign("not-the-secret", body) };
  const gh = "/webhooks/gh";
  const cases: Case[] = [
    { key: "a", label: "(a) valid signature", path: gh, headers: valid, expected: 202 },
    { key: "b", label: "(b) wrong signature", path: gh, headers: wrong, expected: 401 },
    { key: "c", label: "(c) missing signature", path: gh, headers: common, expected: 401 },
    {
      key: "d",
      label: "(d) unknown subscription",
      path: "/webhooks/x",
      headers: valid,
      expected: 404,
    },
  ];
  return { cases, files, body: new TextEncoder().encode(body) };
}

/**
 * The agent endpoint as `fetch`: it never answers, so the worker holds `max_concurrency` events
 * until the SDK's 1 s timeout and the measurement is of ingest alone. An endpoint that failed
 * at once would have the worker spin through the backlog instead.
 */
function silentAgent(_input: unknown, init?: RequestInit): Promise<Response> {
  return new Promise((_, reject) => {
    init?.signal?.addEventListener("abort", () => reject(init.signal!.reason), { once: true });
  });
}

async function hasWrk(): Promise<boolean> {
  try {
    await new Deno.Command("wrk", { args: ["--version"], stdout: "null", stderr: "null" }).output();
    return true;
  } catch {
    return false;
  }
}

const row = (cells: (string | number)[]) =>
  cells.map((cell, i) => i === 0 ? String(cell).padEnd(28) : String(cell).padStart(8)).join(" ");

function printTable(cases: Case[], samples: Map<string, Sample[]>, client: string): void {
  console.log(
    `\n${client}, ${CONNECTIONS} connections, median of ${ROUNDS} rounds of ${CASE_SECONDS} s`,
  );
  console.log(row(["case", "status", "req/s", "p50 ms", "p99 ms"]));
  const rates = new Map<string, number>();
  for (const bench of cases) {
    const runs = samples.get(bench.key)!;
    const rps = median(runs.map((s) => s.requests / s.seconds));
    rates.set(bench.key, rps);
    const p50 = median(runs.map((s) => s.p50Ms)).toFixed(2);
    const p99 = median(runs.map((s) => s.p99Ms)).toFixed(2);
    console.log(row([bench.label, bench.expected, Math.round(rps), p50, p99]));
  }
  const ratio = (key: string) => (rates.get(key)! / rates.get("a")!).toFixed(2);
  console.log(`ratios of req/s: b/a ${ratio("b")}, c/a ${ratio("c")}, d/a ${ratio("d")}`);
}

/** Interleaved timed rounds; checks the statuses and the database after each run. */
async function timedRounds(
  cases: Case[],
  load: (bench: Case, s: number) => Promise<Sample>,
  db: DatabaseSync,
) {
  const samples = new Map(cases.map((bench) => [bench.key, [] as Sample[]]));
  let rejected = 0;
  for (let round = -1; round < ROUNDS; round++) {
    console.error(round < 0 ? "warming up" : `round ${round + 1} of ${ROUNDS}`);
    for (const bench of cases) {
      const before = await settledEventCount(db);
      const sample = await load(bench, round < 0 ? WARMUP_SECONDS : CASE_SECONDS);
      assertStatuses(bench, sample);
      assertStored(bench, sample, (await settledEventCount(db)) - before);
      if (bench.expected !== 202) rejected += sample.requests;
      if (round >= 0) samples.get(bench.key)!.push(sample);
    }
  }
  return { samples, rejected };
}

/** Fixed count of each case, every request awaited: stored events must equal 202 answers. */
async function exactCheck(url: string, cases: Case[], body: Bytes, db: DatabaseSync) {
  const before = await settledEventCount(db);
  let accepted = 0;
  for (const bench of cases) {
    const sample = await runFetch(url, bench, { count: CHECK_COUNT, body });
    assertStatuses(bench, sample);
    accepted += sample.statuses["202"] ?? 0;
  }
  const added = (await settledEventCount(db)) - before;
  if (added !== accepted) throw new Error(`${added} events stored for ${accepted} accepted`);
  return { accepted, rejected: CHECK_COUNT * cases.length - accepted, added };
}

async function main(): Promise<void> {
  const home = await Deno.makeTempDir({ prefix: "agent-bench-" });
  const { cases, files, body } = await setUp(home);
  const config = await loadConfig({ AGENT_HOME: home, HOME: home });
  await startLogging({ file: config.paths.log });
  const gateway = await startGateway(config, { fetch: silentAgent });
  const db = new DatabaseSync(config.paths.stateDb, { readOnly: true });
  const wrk = await hasWrk();
  const load = (bench: Case, seconds: number) =>
    wrk
      ? runWrk(gateway.url, bench, { seconds, files })
      : runFetch(gateway.url, bench, { seconds, body });
  try {
    const { samples, rejected } = await timedRounds(cases, load, db);
    printTable(cases, samples, wrk ? "wrk" : "in-process fetch (shares the gateway's thread)");
    console.log(`state database: 0 events from ${rejected} rejected requests`);
    const exact = await exactCheck(gateway.url, cases, body, db);
    console.log(
      `exact check (fetch, ${CHECK_COUNT} per case): ${exact.accepted} accepted → ` +
        `${exact.added} events stored; ${exact.rejected} rejected → 0`,
    );
  } finally {
    db.close();
    await gateway.stop({ deadlineMs: 2_000 });
    await stopLogging();
    await Deno.remove(home, { recursive: true });
  }
}

if (import.meta.main) await main();
