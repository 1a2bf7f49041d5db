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
 * Usage: deno task bench:spawn [--runs 40] [--heap-mib 200]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { spawnInOwnSession } from "../lib/agents/command.ts";
import { median } from "./_median.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    runs: { type: "string", default: "40" },
    "heap-mib": { type: "string", default: "200" },
  },
});
const RUNS = Number(flags.runs);
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
