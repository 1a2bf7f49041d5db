/**
 * What the ingest benchmarks share: the signed request, the servers they compare the gateway
 * with, the gateway's home folder, starting and stopping child processes, and installing the
 * Debian packages they drive them with.
 *
 * @module
 */
import { createHmac } from "node:crypto";
import { join } from "node:path";
import type { NewEvent } from "../lib/state/mod.ts";

/** The subscriptions' secret; requests are signed with it as GitHub signs. */
export const SECRET = "bench-secret-0123456789abcdef";

/** A 2 KB GitHub-like issues payload. */
export function payload(): string {
  const base = {
    action: "opened",
    issue: { number: 1, title: "Crash on start", body: "" },
    repository: { full_name: "octo/repo" },
  };
  base.issue.body = "x".repeat(2048 - JSON.stringify(base).length);
  return JSON.stringify(base);
}

/**
 * GitHub's signature of `body` under {@link SECRET}: `sha256=<hex HMAC-SHA256>`, the value of
 * `X-Hub-Signature-256`.
 */
export function githubSignature(body: string): string {
  return `sha256=${createHmac("sha256", SECRET).update(body).digest("hex")}`;
}

/** (a): a plain `Deno.serve` that reads the body and answers 202, the ceiling on a machine. */
export const CEILING = `
Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: (a) => console.log("listening on " + a.port) },
  async (request) => { await request.arrayBuffer(); return new Response('{"status":"accepted"}', { status: 202, headers: { "content-type": "application/json" } }); });
`;
/**
 * (m): the least any durable, verifying ingest has to do, in one isolate and about 30 lines:
 * read the body, check GitHub's HMAC, parse the JSON, insert (delivery id, payload) in a
 * group-committed SQLite WAL transaction with a unique index on the delivery id, answer 202.
 * No routing, logging, templates, rate limits or checks of the body, and no WAL checkpoints at
 * all (its WAL just grows during the run): its figures are the most this machine allows a
 * durable ingest in one isolate, the yardstick for (c).
 */
export const MINIMAL = `
import { createHmac, timingSafeEqual } from "node:crypto";
import { DatabaseSync } from "node:sqlite";
const db = new DatabaseSync(Deno.args[0]);
db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0");
db.exec("CREATE TABLE events (id INTEGER PRIMARY KEY, delivery_id TEXT UNIQUE, payload TEXT)");
const insert = db.prepare("INSERT OR IGNORE INTO events (delivery_id, payload) VALUES (?, ?)");
const decoder = new TextDecoder();
let batch = [];
function commit() {
  const items = batch;
  batch = [];
  db.exec("BEGIN IMMEDIATE");
  const fresh = items.map((item) => insert.run(item.id, item.payload).changes === 1);
  db.exec("COMMIT");
  items.forEach((item, i) => item.resolve(fresh[i]));
}
Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: (a) => console.log("listening on " + a.port) },
  async (request) => {
    const body = new Uint8Array(await request.arrayBuffer());
    const given = Buffer.from((request.headers.get("x-hub-signature-256") ?? "").slice(7), "hex");
    const expected = createHmac("sha256", ${JSON.stringify(SECRET)}).update(body).digest();
    if (given.length !== 32 || !timingSafeEqual(given, expected)) return new Response("{}", { status: 401 });
    const payload = decoder.decode(body);
    JSON.parse(payload);
    const id = request.headers.get("x-github-delivery");
    const fresh = await new Promise((resolve) => {
      if (batch.push({ id, payload, resolve }) === 1) setImmediate(commit);
    });
    return Response.json({ status: fresh ? "accepted" : "duplicate", delivery_id: id }, { status: 202 });
  });
`;
/** A loopback chat API (Telegram `sendMessage`) that accepts every message. */
export const SINK = `
Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: (a) => console.log("listening on " + a.port) },
  async (request) => { await request.arrayBuffer(); return Response.json({ ok: true, result: { message_id: 1 } }); });
`;
/** A loopback LLM endpoint that never answers, so agent runs stay pending during a benchmark. */
export const HANG = `
Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: (a) => console.log("listening on " + a.port) },
  (request) => new Promise(() => {}));
`;

/**
 * Writes a gateway home in `home`: `config.yaml` (loopback, port 0, 2 concurrent agent runs)
 * and two subscriptions without rate limits, `agent` (agent mode, answers to the log) and
 * `direct` (direct delivery to Telegram, chat 1), each with a short prompt template.
 * @param home an empty folder
 */
export async function writeGatewayHome(home: string): Promise<void> {
  const now = new Date().toISOString();
  const record = (extra: object) => ({
    secret: SECRET,
    rate_limit: 1_000_000_000,
    created_at: now,
    updated_at: now,
    ...extra,
  });
  await Deno.writeTextFile(
    join(home, "webhook_subscriptions.json"),
    JSON.stringify({
      direct: record({
        deliver: "telegram",
        deliver_only: true,
        deliver_extra: { chat_id: "1" },
        prompt: "Issue {issue.title} on {repository.full_name}",
      }),
      agent: record({
        deliver: "log",
        prompt: "Summarise issue {issue.title} on {repository.full_name}",
      }),
    }),
    { mode: 0o600 },
  );
  await Deno.writeTextFile(
    join(home, "config.yaml"),
    "platforms:\n  webhook:\n    enabled: true\n    extra:\n      host: 127.0.0.1\n      port: 0\nagent:\n  max_concurrency: 2\n  timeout_seconds: 3600\n",
  );
}

/** What `gateway run` prints once it listens; the match's group 1 is the port. */
export const GATEWAY_LISTENING = /listening on http:\/\/127\.0\.0\.1:(\d+)/;

/**
 * Starts `gateway run --quiet` of a checkout on a home folder and waits until it listens.
 * @param options `root`: the checkout whose `main.ts` runs; `home`: its `AGENT_HOME`, e.g. from
 *   {@link writeGatewayHome}; `env`: variables added to this process's environment (the LLM
 *   endpoint, target URLs); `denoFlags`: flags for `deno run` besides `--allow-all`
 * @returns the child and its base URL, `http://127.0.0.1:<port>`
 * @throws Error when it exits or has not listened within 30 s (see {@link spawn})
 */
export async function spawnGateway(options: {
  root: string;
  home: string;
  env: Record<string, string>;
  denoFlags?: string[];
}): Promise<{ child: Deno.ChildProcess; url: string }> {
  const { child, match } = await spawn(
    [
      "run",
      "--allow-all",
      ...(options.denoFlags ?? []),
      join(options.root, "main.ts"),
      "gateway",
      "run",
      "--quiet",
    ],
    { ...Deno.env.toObject(), AGENT_HOME: options.home, ...options.env },
    GATEWAY_LISTENING,
  );
  return { child, url: `http://127.0.0.1:${match[1]}` };
}

/**
 * Starts a child process and waits for `pattern` on its output (standard output or error).
 * @param args the arguments of `deno` (or of `options.command`)
 * @param env the child's environment; `NO_COLOR` and `RUST_BACKTRACE=0` are added
 * @param pattern what the child prints once it is ready, e.g. its port
 * @param options `command`: the program to run (@default this `deno`); `timeoutMs`: how long to
 *   wait for `pattern` (@default {30000})
 * @returns the child and the match
 * @throws Error when `pattern` has not appeared within `timeoutMs`, with what the child printed;
 *   the child is killed first
 */
export async function spawn(
  args: string[],
  env: Record<string, string>,
  pattern: RegExp,
  options: { command?: string; timeoutMs?: number } = {},
): Promise<{ child: Deno.ChildProcess; match: RegExpMatchArray }> {
  const child = new Deno.Command(options.command ?? Deno.execPath(), {
    args,
    env: { ...env, NO_COLOR: "1", RUST_BACKTRACE: "0" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  const found = Promise.withResolvers<RegExpMatchArray>();
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) {
      text += decoder.decode(chunk);
      if (text.length > 100_000) text = text.slice(-50_000);
      const match = text.match(pattern);
      if (match) found.resolve(match);
    }
  };
  pump(child.stdout);
  pump(child.stderr);
  child.status.then(() => found.reject(new Error(`exited before printing ${pattern}:\n${text}`)));
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    found.reject(new Error(`no ${pattern} in:\n${text}`));
  }, options.timeoutMs ?? 30_000);
  const match = await found.promise.finally(() => clearTimeout(timer));
  return { child, match };
}

/**
 * Installs a Debian package with `apt-get` unless all of `commands` are already on the PATH.
 * @param pkg the package, e.g. `wrk`
 * @param commands the programs it provides that the benchmark runs
 * @throws Error when a command is still missing afterwards
 */
export function ensureDebianPackage(pkg: string, commands: string[]): void {
  const has = () =>
    new Deno.Command("sh", {
      args: ["-c", commands.map((command) => `command -v ${command}`).join(" && ")],
      stdout: "null",
    }).outputSync().success;
  if (has()) return;
  console.log(`installing ${pkg} from Debian...`);
  new Deno.Command("sh", { args: ["-c", `apt-get update -qq && apt-get install -y -qq ${pkg}`] })
    .outputSync();
  if (!has()) throw new Error(`${pkg} is not installed and apt-get could not install it`);
}

/** Kills `children` (SIGKILL), waits for them, and removes the folder `home`. */
export async function cleanUp(children: Deno.ChildProcess[], home: string): Promise<void> {
  for (const child of children) {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    await child.status;
  }
  await Deno.remove(home, { recursive: true }).catch(() => {});
}

/**
 * An agent-mode GitHub `issues.opened` event as the ingest path hands it to the state store, with
 * a fresh random delivery id (so each one claims an idempotency key), for the store benchmarks.
 * @param fields the payload, the prompt and when it was received (ms since the epoch)
 */
export function agentEvent(
  fields: { payload: string; prompt: string; receivedAtMs: number },
): NewEvent {
  return {
    subscription: "github",
    eventLabel: "issues.opened",
    deliveryId: crypto.randomUUID(),
    dedupe: true,
    source: "github",
    mode: "agent",
    route: { deliver: "log", skills: [] },
    ...fields,
  };
}

/**
 * The wrk Lua script of the ingest benchmarks: POST `body` signed as GitHub signs (under
 * {@link SECRET}), with a delivery id unique across runs, threads and requests
 * (`<RUN_ID>-<thread>-<n>`), so every request is a new event. {@link wrk} sets `RUN_ID`.
 * @param body the JSON text to send, e.g. {@link payload}
 * @returns the script's text, for a file given to `wrk -s`
 */
export function luaScript(body: string): string {
  const signature = githubSignature(body);
  return `
wrk.method = "POST"
wrk.body = ${JSON.stringify(body)}
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-GitHub-Event"] = "issues"
wrk.headers["X-Hub-Signature-256"] = "${signature}"
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("prefix", os.getenv("RUN_ID") .. "-" .. threads)
end
local counter = 0
request = function()
  counter = counter + 1
  wrk.headers["X-GitHub-Delivery"] = prefix .. "-" .. counter
  return wrk.format()
end
`;
}

/** What one wrk run measured. */
export interface WrkResult {
  /** Requests per second over the run. */
  rps: number;
  /** Median latency, in milliseconds. */
  p50Ms: number;
  /** 99th percentile latency, in milliseconds. */
  p99Ms: number;
  /** Requests completed. */
  requests: number;
  /** Answers that were not 2xx or 3xx. */
  non2xx: number;
}

/** A latency percentile of wrk's `--latency` output, in milliseconds; NaN when absent. */
function parseLatency(text: string, percentile: string): number {
  const match = text.match(new RegExp(`\\s${percentile}%\\s+([\\d.]+)(us|ms|s)`));
  if (!match) return NaN;
  const value = Number(match[1]);
  return match[2] === "us" ? value / 1000 : match[2] === "s" ? value * 1000 : value;
}

let wrkRuns = 0;

/**
 * Runs wrk with one thread (the load generator keeps to one of the two cores) against `url`.
 * @param url the server's URL
 * @param script the path of a Lua script such as {@link luaScript}'s
 * @param seconds how long to run
 * @param connections connections kept open, each with one request at a time
 * @returns wrk's figures; NaN rates and latencies when wrk printed none (it could not connect)
 */
export async function wrk(
  url: string,
  script: string,
  seconds: number,
  connections: number,
): Promise<WrkResult> {
  const output = await new Deno.Command("wrk", {
    args: ["-t1", `-c${connections}`, `-d${seconds}s`, "--latency", "-s", script, url],
    env: { RUN_ID: `${Date.now()}-${++wrkRuns}` },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  return {
    rps: Number(text.match(/Requests\/sec:\s+([\d.]+)/)?.[1] ?? NaN),
    p50Ms: parseLatency(text, "50"),
    p99Ms: parseLatency(text, "99"),
    requests: Number(text.match(/(\d+) requests in/)?.[1] ?? 0),
    non2xx: Number(text.match(/Non-2xx or 3xx responses: (\d+)/)?.[1] ?? 0),
  };
}

const CLOCK_TICKS_PER_SECOND = Number(
  new TextDecoder().decode(new Deno.Command("getconf", { args: ["CLK_TCK"] }).outputSync().stdout),
) || 100;

/**
 * The CPU time (user and system) a `/proc` stat file records, in µs.
 * @param statFile `/proc/<pid>/stat` for a whole process, `/proc/<pid>/task/<tid>/stat` for one
 *   of its threads
 * @returns utime + stime (fields 14 and 15), converted from clock ticks
 */
export function cpuTimeUs(statFile: string): number {
  const stat = Deno.readTextFileSync(statFile);
  // Fields after the command name, from field 3 on: utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND * 1e6;
}
