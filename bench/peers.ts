/**
 * Issue 25's benchmark: the gateway's ingest against its peers, in one run on one machine. With
 * two CPUs or more, every server is pinned to CPU 0 and wrk (with this process) to CPU 1. Cases,
 * each sent a 2 KB body signed as GitHub signs with a new delivery id per request:
 *
 *   (a) a plain `Deno.serve` answering 202;
 *   (w) adnanh/webhook (Debian `webhook`, installed when missing) with one hook whose rule checks
 *       `X-Hub-Signature-256` (`payload-hmac-sha256`), running nothing and persisting nothing;
 *   (m) the minimal durable ingest of `_shared.ts`;
 *   (c) the gateway in agent mode (durable write, then 202).
 *
 * Saturation: after a warm-up of each, `--rounds` rounds in which every case runs `--seconds`
 * with `--connections` connections, the order reversed every other round. Then a fixed rate, half
 * of (c)'s median saturation rate, paced as wrk2 paces (see `pacing` in `_peers.ts`), for (c),
 * (w) and (a), again in `--rounds` interleaved rounds: p50 and p99 and the RSS under that load.
 * Idle RSS of (a) and (c) is read once they listen, before any request, and again 5 s after the
 * last load (everything a request needs then loaded). It prints each round,
 * the medians, the ratios c/w and c/m (medians of each round's), and each target of issue 25 met
 * or not.
 *
 * Usage: deno task bench:peers [--seconds 10] [--warmup 5] [--connections 32] [--rounds 2]
 * `BENCH_GATEWAY_FLAGS` adds Deno flags to the gateway (`--v8-flags=--max-semi-space-size=4`).
 *
 * @module
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { median } from "./_median.ts";
import {
  CEILING,
  cleanUp,
  ensureDebianPackage,
  GATEWAY_LISTENING,
  HANG,
  luaScript,
  MINIMAL,
  payload,
  spawn,
  writeGatewayHome,
  wrk,
  type WrkResult,
} from "./_shared.ts";
import {
  freePort,
  machineTicks,
  pacing,
  pinToCores,
  rssMiB,
  sampleRss,
  spawnWebhook,
} from "./_peers.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    seconds: { type: "string", default: "10" },
    warmup: { type: "string", default: "5" },
    connections: { type: "string", default: "32" },
    rounds: { type: "string", default: "2" },
  },
});
const SECONDS = Number(flags.seconds);
const WARMUP_SECONDS = Number(flags.warmup);
const CONNECTIONS = Number(flags.connections);
const ROUNDS = Math.max(1, Math.floor(Number(flags.rounds)) || 1);
const ROOT = new URL("..", import.meta.url).pathname;

type Case = "a" | "w" | "m" | "c";
const NAMES: Record<Case, string> = {
  a: "(a) plain Deno.serve, 202",
  w: "(w) adnanh/webhook, HMAC rule",
  m: "(m) minimal durable ingest",
  c: "(c) gateway, agent mode",
};

/** A case's figures in one round: wrk's, the share of CPU stolen, and the RSS sampled. */
interface Measured extends WrkResult {
  stealPercent: number;
  rssMaxMiB: number;
}

/** Runs `program` pinned by `pin` (taskset's arguments), or as is when `pin` is empty. */
function pinned(pin: string[], program: string, args: string[]) {
  return pin.length
    ? { command: "taskset", args: [...pin, program, ...args] }
    : { command: program, args };
}

/** Starts a `deno eval` server (pinned) and waits for its port. */
async function evalServer(pin: string[], code: string, extra: string[] = []) {
  const run = pinned(pin, Deno.execPath(), ["eval", code, ...extra]);
  const { child, match } = await spawn(run.args, {}, /listening on (\d+)/, {
    command: run.command,
  });
  return { child, url: `http://127.0.0.1:${match[1]}/` };
}

/** Starts the gateway of this checkout in agent mode on `home` (pinned). */
async function gatewayServer(pin: string[], home: string, llmUrl: string) {
  const denoFlags = Deno.env.get("BENCH_GATEWAY_FLAGS")?.split(" ").filter(Boolean) ?? [];
  const run = pinned(pin, Deno.execPath(), [
    "run",
    "--allow-all",
    ...denoFlags,
    join(ROOT, "main.ts"),
    "gateway",
    "run",
    "--quiet",
  ]);
  const env = {
    ...Deno.env.toObject(),
    AGENT_HOME: home,
    OPENAI_BASE_URL: `${llmUrl}v1`,
    OPENAI_API_KEY: "bench",
    DASHBOARD_PORT: "0",
  };
  const { child, match } = await spawn(run.args, env, GATEWAY_LISTENING, {
    command: run.command,
  });
  return { child, url: `http://127.0.0.1:${match[1]}/webhooks/agent` };
}

/** Waits `ms` and reads the RSS of `pid` then, in MiB: its RSS at rest. */
async function idleRss(pid: number, ms = 2000): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, ms));
  return rssMiB(pid);
}

/** Runs wrk with `script` against `url` and samples the server's RSS and the steal meanwhile. */
async function measure(url: string, pid: number, script: string): Promise<Measured> {
  await new Deno.Command("sync").output();
  const before = machineTicks();
  const { result, maxMiB } = await sampleRss(pid, () => wrk(url, script, SECONDS, CONNECTIONS));
  const after = machineTicks();
  const stealPercent = 100 * (after.steal - before.steal) / Math.max(1, after.total - before.total);
  return { ...result, stealPercent, rssMaxMiB: maxMiB };
}

/** A round's cases in order: the given order in odd rounds, reversed in even ones. */
function ordered<T>(round: number, cases: T[]): T[] {
  return round % 2 === 1 ? cases : cases.toReversed();
}

const format = (value: number, digits = 0) => value.toFixed(digits);

function printRow(label: string, results: Measured[]) {
  const of = (field: keyof Measured) => median(results.map((result) => result[field]));
  console.log(
    `${label.padEnd(34)} ${format(of("rps")).padStart(8)} ${format(of("p50Ms"), 2).padStart(8)} ${
      format(of("p99Ms"), 2).padStart(8)
    } ${String(results.reduce((sum, result) => sum + result.non2xx, 0)).padStart(8)} ${
      format(of("rssMaxMiB"), 1).padStart(8)
    } ${format(of("stealPercent"), 1).padStart(6)}`,
  );
}

function printHeader(title: string) {
  console.log(
    `\n${title}\n${"case".padEnd(34)} ${"req/s".padStart(8)} ${"p50 ms".padStart(8)} ${
      "p99 ms".padStart(8)
    } ${"non-2xx".padStart(8)} ${"RSS MiB".padStart(8)} ${"steal%".padStart(6)}`,
  );
}

/** Prints one target: its name, met or not, and the figures it was judged on. */
function target(name: string, met: boolean, figures: string) {
  console.log(`  ${met ? "met    " : "NOT met"}  ${name}: ${figures}`);
}

async function main() {
  ensureDebianPackage("wrk", ["wrk"]);
  ensureDebianPackage("webhook", ["webhook"]);
  const pin = pinToCores();
  const home = await Deno.makeTempDir({ prefix: "agent-bench-peers-" });
  const children: Deno.ChildProcess[] = [];
  try {
    const body = payload();
    const script = join(home, "post.lua");
    await Deno.writeTextFile(script, luaScript(body));
    await writeGatewayHome(home);
    const llm = await evalServer([], HANG);
    children.push(llm.child);
    const ceiling = await evalServer(pin, CEILING);
    children.push(ceiling.child);
    const gateway = await gatewayServer(pin, home, llm.url);
    children.push(gateway.child);
    const webhook = await spawnWebhook(home, freePort(), pin);
    children.push(webhook.child);
    const idle = { a: await idleRss(ceiling.child.pid), c: await idleRss(gateway.child.pid) };
    console.log(
      `servers ${pin.length ? "pinned to CPU 0, wrk to CPU 1" : "not pinned (one CPU)"}; ` +
        `wrk: ${CONNECTIONS} connections, ${SECONDS} s per case, ${body.length}-byte body\n` +
        `idle RSS: (a) ${format(idle.a, 1)} MiB, (c) ${format(idle.c, 1)} MiB`,
    );
    const servers: Record<Exclude<Case, "m">, { url: string; pid: number }> = {
      a: { url: ceiling.url, pid: ceiling.child.pid },
      w: { url: webhook.url, pid: webhook.child.pid },
      c: { url: gateway.url, pid: gateway.child.pid },
    };
    for (const server of Object.values(servers)) {
      await wrk(server.url, script, WARMUP_SECONDS, CONNECTIONS);
    }
    const saturation = await saturationRounds(home, pin, servers, script);
    const rate = Math.round(median(saturation.map((round) => round.c.rps)) / 2);
    const paced = await pacedRounds(home, servers, body, rate);
    // At rest again, with everything a request needs loaded: what a gateway between bursts holds.
    const rested = { a: await idleRss(ceiling.child.pid, 5000), c: rssMiB(gateway.child.pid) };
    report(saturation, paced, rate, idle);
    console.log(
      `RSS at rest 5 s after the load: (a) ${format(rested.a, 1)} MiB, (c) ${
        format(rested.c, 1)
      } MiB, c/a ${format(rested.c / rested.a, 2)}`,
    );
  } finally {
    await cleanUp(children, home);
  }
}

/** The saturation rounds: every case at full load, (m) started afresh on a new file each round. */
async function saturationRounds(
  home: string,
  pin: string[],
  servers: Record<Exclude<Case, "m">, { url: string; pid: number }>,
  script: string,
): Promise<Record<Case, Measured>[]> {
  const rounds: Record<Case, Measured>[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const dbPath = join(home, `minimal-${round}.db`);
    const minimal = await evalServer(pin, MINIMAL, [dbPath]);
    try {
      await wrk(minimal.url, script, WARMUP_SECONDS, CONNECTIONS);
      const all = { ...servers, m: { url: minimal.url, pid: minimal.child.pid } };
      const results = {} as Record<Case, Measured>;
      for (const name of ordered(round, ["a", "w", "m", "c"] as Case[])) {
        results[name] = await measure(all[name].url, all[name].pid, script);
      }
      rounds.push(results);
      const { a, w, m, c } = results;
      console.log(
        `round ${round}: a ${format(a.rps)}, w ${format(w.rps)}, m ${format(m.rps)}, c ${
          format(c.rps)
        } req/s; c/w ${format(c.rps / w.rps, 2)}, c/m ${format(c.rps / m.rps, 2)}; steal ${
          format(Math.max(a.stealPercent, w.stealPercent, m.stealPercent, c.stealPercent))
        }% at most`,
      );
    } finally {
      minimal.child.kill("SIGKILL");
      await minimal.child.status;
      for (const suffix of ["", "-wal", "-shm"]) await Deno.remove(dbPath + suffix).catch(() => {});
    }
  }
  return rounds;
}

/** The fixed-rate rounds: (c), (w) and (a) at `rate` requests per second in all. */
async function pacedRounds(
  home: string,
  servers: Record<Exclude<Case, "m">, { url: string; pid: number }>,
  body: string,
  rate: number,
): Promise<Record<"a" | "w" | "c", Measured>[]> {
  const script = join(home, "paced.lua");
  await Deno.writeTextFile(script, luaScript(body) + pacing(rate));
  console.log(`\nfixed rate: ${rate} req/s, half of (c)'s median saturation rate`);
  const rounds: Record<"a" | "w" | "c", Measured>[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const results = {} as Record<"a" | "w" | "c", Measured>;
    for (const name of ordered(round, ["c", "w", "a"] as const)) {
      results[name] = await measure(servers[name].url, servers[name].pid, script);
    }
    rounds.push(results);
    const { a, w, c } = results;
    console.log(
      `round ${round}: req/s c ${format(c.rps)}, w ${format(w.rps)}, a ${format(a.rps)}; p99 c ${
        format(c.p99Ms, 2)
      } ms, w ${format(w.p99Ms, 2)} ms; RSS c ${format(c.rssMaxMiB, 1)} MiB, a ${
        format(a.rssMaxMiB, 1)
      } MiB`,
    );
  }
  return rounds;
}

function report(
  saturation: Record<Case, Measured>[],
  paced: Record<"a" | "w" | "c", Measured>[],
  rate: number,
  idle: { a: number; c: number },
) {
  printHeader(`saturation, median of ${ROUNDS} round(s) (RSS: the highest sampled)`);
  for (const name of ["a", "w", "m", "c"] as Case[]) {
    printRow(NAMES[name], saturation.map((round) => round[name]));
  }
  printHeader(`fixed rate of ${rate} req/s, median of ${ROUNDS} round(s)`);
  for (const name of ["a", "w", "c"] as const) {
    printRow(NAMES[name], paced.map((round) => round[name]));
  }
  const ratio = <R extends Record<string, Measured>>(
    rounds: R[],
    top: keyof R,
    bottom: keyof R,
    field: "rps" | "p99Ms" | "rssMaxMiB",
  ) => median(rounds.map((round) => round[top][field] / round[bottom][field]));
  const cw = ratio(saturation, "c", "w", "rps");
  const cm = ratio(saturation, "c", "m", "rps");
  const p99 = median(paced.map((round) => round.c.p99Ms));
  const p99Ratio = ratio(paced, "c", "w", "p99Ms");
  const rss = ratio(paced, "c", "a", "rssMaxMiB");
  console.log(`\ntargets of issue 25 (ratios: medians of each round's):`);
  target("req/s c/w ≥ 1.5", cw >= 1.5, format(cw, 2));
  target("req/s c/m ≥ 0.95", cm >= 0.95, format(cm, 2));
  target(`p99 of (c) at ${rate} req/s ≤ 5 ms`, p99 <= 5, `${format(p99, 2)} ms`);
  target("p99 at that rate c/w ≤ 1.5", p99Ratio <= 1.5, format(p99Ratio, 2));
  target("RSS under that load c/a ≤ 1.3", rss <= 1.3, format(rss, 2));
  target("idle RSS c/a ≤ 1.5", idle.c / idle.a <= 1.5, format(idle.c / idle.a, 2));
}

await main();
