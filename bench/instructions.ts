/**
 * Instructions per request on the ingest path, counted by valgrind's callgrind: the CPU work of
 * each server, in a figure that moves far less with what else the machine is doing than req/s,
 * which moves by half between rounds on the shared 2-core machine. It still moves by a few
 * percent: (c)'s main thread counted between 415,000 and 451,000 instructions per request in
 * seven runs, because some of the work is paced by the clock and valgrind's speed depends on the
 * load (WAL checkpoint passes, log flushes, how many requests a group commit holds). Compares three of `deno task bench`'s cases ((b), direct delivery, is
 * left out: its cost is the outbound call):
 *
 *   (a) a plain `Deno.serve` that reads the body and answers 202;
 *   (m) the minimal durable ingest (HMAC check, JSON parse, group-committed SQLite insert, 202);
 *   (c) the gateway in agent mode: durable write to SQLite, then 202.
 *
 * Each server runs under callgrind, all three at once. The benchmark sends `--warmup` requests so that the JIT has compiled the hot path, zeroes the
 * counters (`callgrind_control -z`), sends `--requests` more, 32 at a time, each with a fresh
 * `X-GitHub-Delivery` and a 2 KB body signed as GitHub signs, and dumps the counters
 * (`callgrind_control -d`). It prints, per case, the instructions per request of the main thread
 * (the event loop, which limits each server's rate) and of all threads, then the ratios m/c and
 * a/c. Valgrind is installed from Debian when missing.
 *
 * Caveats: under valgrind the CPU's SHA extensions go unused, so each HMAC-SHA256 of the body
 * counts about 108,000 instructions, far more than the hardware needs ((m) and (c) each compute
 * one per request); and group commits likely hold more requests than under `wrk`, so each
 * commit's share of a request is smaller. On 2026-11-21, m/c was 0.62 and 0.63 here, and 0.59 to 0.68 in event-loop CPU time.
 *
 * Usage: deno task bench:instructions [--requests 2000] [--warmup 1500]
 *
 * @module
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  CEILING,
  cleanUp,
  ensureDebianPackage,
  GATEWAY_LISTENING,
  githubSignature,
  HANG,
  MINIMAL,
  payload,
  spawn,
  writeGatewayHome,
} from "./_shared.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    requests: { type: "string", default: "2000" },
    warmup: { type: "string", default: "1500" },
  },
});
const REQUESTS = Number(flags.requests);
const WARMUP = Number(flags.warmup);
if (!(Number.isInteger(REQUESTS) && REQUESTS > 0 && Number.isInteger(WARMUP) && WARMUP >= 0)) {
  throw new Error("--requests must be a positive integer and --warmup an integer >= 0");
}
const CONNECTIONS = 32;
const ROOT = new URL("..", import.meta.url).pathname;
/** Starting a server under valgrind takes a minute or two on the 2-core machine. */
const START_TIMEOUT_MS = 600_000;

/** Instructions of one case: per request, or in all (a dump's totals). */
interface Instructions {
  /** The main thread's: the event loop. */
  mainThread: number;
  /** All threads' together: the event loop, V8's helpers, the WAL checkpointer. */
  allThreads: number;
}

/**
 * Sends `count` signed POSTs to `url`, `CONNECTIONS` at a time, each with a new delivery id.
 * @throws Error when any answer is not 202
 */
async function send(url: string, body: string, count: number, run: string): Promise<void> {
  const headers = {
    "content-type": "application/json",
    "x-github-event": "issues",
    "x-hub-signature-256": githubSignature(body),
  };
  let next = 0;
  const statuses = new Map<number, number>();
  const lane = async () => {
    while (next < count) {
      const id = `${run}-${next++}`;
      const response = await fetch(url, {
        method: "POST",
        body,
        headers: { ...headers, "x-github-delivery": id },
      });
      await response.arrayBuffer();
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, lane));
  if (statuses.size !== 1 || !statuses.has(202)) {
    throw new Error(`${url} answered ${JSON.stringify(Object.fromEntries(statuses))}`);
  }
}

/**
 * Zeroes (`-z`) or dumps (`-d`) the counters of the callgrind process `pid`; returns once done.
 * @throws Error when `callgrind_control` reports an error (it exits 0 and prints the error on
 *   standard output) or takes more than a minute
 */
async function callgrindControl(option: "-z" | "-d", pid: number): Promise<void> {
  const output = await new Deno.Command("callgrind_control", {
    args: [option, String(pid)],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(60_000),
  }).output();
  const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
  if (!output.success || !text.includes(`to pid ${pid}`) || /error|not detected/i.test(text)) {
    throw new Error(`callgrind_control ${option} ${pid} failed: ${text.trim()}`);
  }
}

/**
 * The instructions in callgrind's first dump of process `pid`, one file per thread
 * (`cg.<pid>.1-<thread>`): thread 01 is the main thread.
 */
async function readDump(folder: string, pid: number): Promise<Instructions> {
  const prefix = `cg.${pid}.1-`;
  let mainThread = 0;
  let allThreads = 0;
  for await (const entry of Deno.readDir(folder)) {
    if (!entry.name.startsWith(prefix)) continue;
    const text = await Deno.readTextFile(join(folder, entry.name));
    const instructions = Number(text.match(/^(?:summary|totals): (\d+)/m)?.[1]);
    if (!Number.isFinite(instructions)) throw new Error(`no instruction count in ${entry.name}`);
    allThreads += instructions;
    if (entry.name === `${prefix}01`) mainThread = instructions;
  }
  if (mainThread === 0) throw new Error(`no callgrind dump of the main thread of ${pid}`);
  return { mainThread, allThreads };
}

/** One case: what to start under callgrind and where to send its requests. */
interface Case {
  /** Its letter, for the delivery ids. */
  name: string;
  /** The arguments of `deno`. */
  denoArgs: string[];
  /** Environment variables added to this process's. */
  env?: Record<string, string>;
  /** What the server prints once it listens; group 1 is the port. */
  ready: RegExp;
  /** The URL path requests go to. */
  path: string;
  /** An empty folder for callgrind's files. */
  folder: string;
}

/**
 * Runs one case: starts it under callgrind, warms it up, counts `REQUESTS` requests.
 * @returns instructions per request
 * @throws Error when the server does not start, answers anything but 202, or callgrind fails
 */
async function measure(bench: Case, body: string): Promise<Instructions> {
  const { child, match } = await spawn(
    [
      "--tool=callgrind",
      "--separate-threads=yes",
      `--callgrind-out-file=${join(bench.folder, "cg.%p")}`,
      Deno.execPath(),
      ...bench.denoArgs,
    ],
    bench.env ?? {},
    bench.ready,
    { command: "valgrind", timeoutMs: START_TIMEOUT_MS },
  );
  try {
    const url = `http://127.0.0.1:${match[1]}${bench.path}`;
    await send(url, body, WARMUP, `${bench.name}-warmup-${Date.now()}`);
    await callgrindControl("-z", child.pid);
    await send(url, body, REQUESTS, `${bench.name}-${Date.now()}`);
    await callgrindControl("-d", child.pid);
    const dump = await readDump(bench.folder, child.pid);
    return { mainThread: dump.mainThread / REQUESTS, allThreads: dump.allThreads / REQUESTS };
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
}

async function main(): Promise<void> {
  ensureDebianPackage("valgrind", ["valgrind", "callgrind_control"]);
  const home = await Deno.makeTempDir({ prefix: "agent-bench-instructions-" });
  const children: Deno.ChildProcess[] = [];
  try {
    const body = payload();
    await writeGatewayHome(home);
    const llm = await spawn(["eval", HANG], {}, /listening on (\d+)/);
    children.push(llm.child);
    const folders = await Promise.all(
      ["a", "m", "c"].map(async (name) => {
        const folder = join(home, `callgrind-${name}`);
        await Deno.mkdir(folder);
        return folder;
      }),
    );
    console.log(
      `callgrind: ${REQUESTS} requests counted after ${WARMUP} to warm up, ${CONNECTIONS} at a ` +
        `time, ${body.length}-byte signed body (the three servers start under valgrind: a few minutes)`,
    );
    const cases: Case[] = [
      { name: "a", denoArgs: ["eval", CEILING], ready: /listening on (\d+)/, path: "/" },
      {
        name: "m",
        denoArgs: ["eval", MINIMAL, join(home, "minimal.db")],
        ready: /listening on (\d+)/,
        path: "/",
      },
      {
        name: "c",
        denoArgs: ["run", "--allow-all", join(ROOT, "main.ts"), "gateway", "run", "--quiet"],
        env: {
          AGENT_HOME: home,
          OPENAI_BASE_URL: `http://127.0.0.1:${llm.match[1]}/v1`,
          OPENAI_API_KEY: "bench",
        },
        ready: GATEWAY_LISTENING,
        path: "/webhooks/agent",
      },
    ].map((bench, i) => ({ ...bench, folder: folders[i] }));
    // Every case ends (and kills its server) before the home folder goes, even when one fails.
    const results = await Promise.allSettled(cases.map((bench) => measure(bench, body)));
    const failed = results.find((result) => result.status === "rejected");
    if (failed) throw failed.reason;
    const [a, m, c] = results.map((result) =>
      (result as PromiseFulfilledResult<Instructions>).value
    );
    const format = (value: number) => Math.round(value).toLocaleString("en-US").padStart(13);
    console.log(
      `\ninstructions per request\n${"case".padEnd(40)} ${"main thread".padStart(13)} ${
        "all threads".padStart(13)
      }`,
    );
    for (
      const [label, count] of [
        ["(a) plain Deno.serve, 202", a],
        ["(m) minimal verify + SQLite insert, 202", m],
        ["(c) gateway, agent mode (durable + 202)", c],
      ] as const
    ) {
      console.log(`${label.padEnd(40)} ${format(count.mainThread)} ${format(count.allThreads)}`);
    }
    console.log(
      `\nratios, main thread: m/c ${(m.mainThread / c.mainThread).toFixed(2)}  a/c ${
        (a.mainThread / c.mainThread).toFixed(2)
      }; all threads: m/c ${(m.allThreads / c.allThreads).toFixed(2)}  a/c ${
        (a.allThreads / c.allThreads).toFixed(2)
      }`,
    );
  } finally {
    await cleanUp(children, home);
  }
}

await main();
