/**
 * Benchmark of starting a `command` agent: how long the spawn holds the event loop, which every
 * request waiting meanwhile waits out. Compares in one run, alternating, on a process that holds
 * about as much memory as a busy gateway (`--heap-mib`, 200):
 *
 *   (d) `Deno.Command` with `detached: true`, which forks the whole process to make the session;
 *   (s) `spawnInOwnSession`, what the runner does: the `setsid` program spawned without a fork.
 *
 * Each spawn runs `true` with its three streams piped, as the runner does, and is waited for.
 * It prints each case's median and largest synchronous spawn time in ms, and the ratio s/d of
 * the medians.
 *
 * Then (unless `--ingest-seconds 0`) it drives the real gateway in agent mode with wrk, as
 * `deno task bench` does (a 2 KB body signed as GitHub signs, 32 connections), while its agent
 * (h) is an LLM endpoint that never answers (the load benchmark's case c), (f) a `command` agent
 * that exits 1 (`false`), (t) a `command` agent that answers at once (`cat`); and prints each
 * case's req/s, p99 and agent runs started per second. `--baseline <checkout>` runs the same
 * cases on another checkout's `main.ts` too, alternating, to compare with the code before a
 * change.
 *
 * Usage: deno task bench:spawn [--runs 40] [--heap-mib 200] [--ingest-seconds 5]
 *   [--baseline <checkout>]
 *
 * @module
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { DatabaseSync } from "node:sqlite";
import { SETSID, spawnInOwnSession } from "../lib/agents/own_session.ts";
import { median } from "./_median.ts";
import {
  cleanUp,
  ensureDebianPackage,
  HANG,
  luaScript,
  payload,
  spawn,
  spawnGateway,
  writeGatewayHome,
  wrk,
} from "./_shared.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    runs: { type: "string", default: "40" },
    "heap-mib": { type: "string", default: "200" },
    "ingest-seconds": { type: "string", default: "5" },
    baseline: { type: "string" },
  },
});
const INGEST_SECONDS = Number(flags["ingest-seconds"]);
const RUNS = Number(flags.runs);
if (SETSID === undefined) {
  console.log(
    "No setsid program here (macOS?): the runner uses detached, so there is nothing to compare.",
  );
  Deno.exit(0);
}
const HEAP_MIB = Number(flags["heap-mib"]);

/** Memory the process holds, written to so that its pages are really there. */
const held: Uint8Array[] = [];
for (let i = 0; i < HEAP_MIB; i++) held.push(new Uint8Array(1 << 20).fill(1));

const env = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" };
const cases = {
  d: () =>
    new Deno.Command("true", {
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      env,
      clearEnv: true,
      detached: true,
    }).spawn(),
  s: () => spawnInOwnSession("true", [], env),
};
const times: Record<keyof typeof cases, number[]> = { d: [], s: [] };

for (let run = 0; run < RUNS; run++) {
  for (const name of (run % 2 ? ["d", "s"] : ["s", "d"]) as (keyof typeof cases)[]) {
    const started = performance.now();
    const child = cases[name]();
    times[name].push(performance.now() - started);
    child.stdin.close();
    await child.output();
  }
}

const rss = Number(Deno.readTextFileSync("/proc/self/status").match(/VmRSS:\s+(\d+)/)?.[1] ?? 0);
console.log(`${RUNS} spawns per case, alternating; RSS ${(rss / 1024).toFixed(0)} MiB\n`);
console.log(`${"case".padEnd(44)} ${"p50 ms".padStart(8)} ${"max ms".padStart(8)}`);
for (
  const [name, label] of [["d", "(d) detached: true (fork)"], ["s", "(s) setsid, spawned"]] as const
) {
  console.log(
    `${label.padEnd(44)} ${median(times[name]).toFixed(2).padStart(8)} ${
      Math.max(...times[name]).toFixed(2).padStart(8)
    }`,
  );
}
console.log(`\nratio of the medians, s/d: ${(median(times.s) / median(times.d)).toFixed(3)}`);

held.length = 0;

/** The agent a case gives the gateway: a `command` argv, or none (the LLM that never answers). */
const AGENTS: Record<"h" | "f" | "t", string[] | undefined> = {
  h: undefined,
  f: ["false"],
  t: ["cat"],
};
const AGENT_LABELS = {
  h: "(h) LLM that never answers",
  f: "(f) command agent that exits 1",
  t: "(t) command agent that answers (cat)",
};

/**
 * One case: a new gateway home with `agent` as its agent, the gateway of `root` started on it,
 * `INGEST_SECONDS` of wrk, then the agent runs it started.
 * @returns req/s, p99 in ms and agent runs started per second
 */
async function ingestCase(
  root: string,
  agent: readonly string[] | undefined,
  llmPort: string,
): Promise<{ rps: number; p99Ms: number; runsPerSecond: number }> {
  const home = await Deno.makeTempDir({ prefix: "agent-bench-spawn-" });
  const children: Deno.ChildProcess[] = [];
  try {
    await writeGatewayHome(home);
    if (agent) {
      const config = join(home, "config.yaml");
      const text = await Deno.readTextFile(config);
      await Deno.writeTextFile(
        config,
        text.replace(
          "agent:\n",
          `agent:\n  provider: command\n  command: ${JSON.stringify(agent)}\n`,
        ),
      );
    }
    const script = join(home, "post.lua");
    await Deno.writeTextFile(script, luaScript(payload()));
    const gateway = await spawnGateway({
      root,
      home,
      env: { OPENAI_BASE_URL: `http://127.0.0.1:${llmPort}/v1`, OPENAI_API_KEY: "bench" },
    });
    children.push(gateway.child);
    const result = await wrk(`${gateway.url}/webhooks/agent`, script, INGEST_SECONDS, 32);
    const db = new DatabaseSync(join(home, "state", "gateway.db"), { readOnly: true });
    const { runs } = db.prepare("SELECT count(*) AS runs FROM events WHERE attempts > 0").get() as {
      runs: number;
    };
    db.close();
    return { rps: result.rps, p99Ms: result.p99Ms, runsPerSecond: Number(runs) / INGEST_SECONDS };
  } finally {
    await cleanUp(children, home);
  }
}

if (INGEST_SECONDS > 0) {
  ensureDebianPackage("wrk", ["wrk"]);
  const roots: [string, string][] = [["this", new URL("..", import.meta.url).pathname]];
  if (flags.baseline) roots.push(["baseline", flags.baseline]);
  const llm = await spawn(["eval", HANG], {}, /listening on (\d+)/);
  try {
    console.log(
      `\nagent-mode ingest, wrk ${INGEST_SECONDS} s, 32 connections, a new gateway per case`,
    );
    console.log(
      `${"case".padEnd(40)} ${"code".padEnd(9)} ${"req/s".padStart(8)} ${"p99 ms".padStart(8)} ${
        "runs/s".padStart(8)
      }`,
    );
    for (
      const [key, agent] of Object.entries(AGENTS) as [keyof typeof AGENTS, string[] | undefined][]
    ) {
      for (const [name, root] of roots) {
        const { rps, p99Ms, runsPerSecond } = await ingestCase(root, agent, llm.match[1]);
        console.log(
          `${AGENT_LABELS[key].padEnd(40)} ${name.padEnd(9)} ${rps.toFixed(0).padStart(8)} ${
            p99Ms.toFixed(1).padStart(8)
          } ${runsPerSecond.toFixed(0).padStart(8)}`,
        );
      }
    }
  } finally {
    llm.child.kill("SIGKILL");
    await llm.child.status;
  }
}
