/**
 * Load benchmark of the ingest path, driven by `wrk` (installed from Debian when missing):
 * a 2 KB JSON body signed as GitHub signs, a fresh `X-GitHub-Delivery` per request,
 * 32 connections. Compares in one run, on one machine:
 *
 *   (a) a plain `Deno.serve` that reads the body and answers 202: the ceiling here;
 *   (b) the gateway in direct mode, delivering to a loopback Telegram sink;
 *   (c) the gateway in agent mode: durable write to SQLite, then 202;
 *   (d) (c) again, with one dashboard client following the events page live (its stream of
 *       server-sent events read whole), to see what the dashboard costs the ingest path;
 *   (m) a minimal durable ingest (HMAC check, JSON parse, group-committed SQLite insert, 202):
 *       what any implementation must at least do, as a yardstick for (c) on this machine;
 *
 * in that order ((c) and (d) swapped every other round), each after a `sync`, over `--rounds`
 * rounds (3), so that the machine's drift from minute to minute reaches every case alike. It
 * prints each round, then per case the median req/s, p50 and p99, the non-2xx answers summed,
 * the median CPU time the server's event loop spent per request and the median share of CPU
 * time the hypervisor stole; then the medians of each round's ratios b/a, c/a, c/b, m/a, c/m
 * and of the event-loop costs m/c, and whether the targets are met, d/c with the lowest and
 * highest round's among them and the event-loop costs' d/c. Then it keeps feeding agent mode
 * until `--ids` distinct delivery ids are stored (1,000,000; 0 skips this) and prints the
 * gateway's RSS along the way (ids live in the database, so it must stay flat).
 *
 * Usage: deno task bench [--seconds 10] [--warmup 2] [--connections 32] [--rounds 3]
 *   [--ids 1000000]
 * `BENCH_GATEWAY_FLAGS` adds Deno flags to the gateway process, to profile it:
 * `BENCH_GATEWAY_FLAGS=--v8-flags=--prof deno task bench --ids 0`.
 *
 * @module
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { median } from "./_median.ts";
import { dashboardUrl, followEventsPage } from "./_dashboard.ts";
import {
  CEILING,
  cleanUp,
  cpuTimeUs,
  ensureDebianPackage,
  HANG,
  luaScript,
  MINIMAL,
  payload,
  SINK,
  spawn,
  spawnGateway,
  writeGatewayHome,
  wrk,
  type WrkResult,
} from "./_shared.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    seconds: { type: "string", default: "10" },
    warmup: { type: "string", default: "2" },
    connections: { type: "string", default: "32" },
    ids: { type: "string", default: "1000000" },
    rounds: { type: "string", default: "3" },
  },
});
const SECONDS = Number(flags.seconds);
const WARMUP_SECONDS = Number(flags.warmup);
const CONNECTIONS = Number(flags.connections);
const IDS = Number(flags.ids);
const ROUNDS = Math.max(1, Math.floor(Number(flags.rounds)) || 1);
const ROOT = new URL("..", import.meta.url).pathname;

/** One round: each case measured once, in the order a, b, c and d (or d and c), m. */
interface Round {
  a: CaseResult;
  b: CaseResult;
  c: CaseResult;
  d: CaseResult;
  m: CaseResult;
}

/** A case's figures: wrk's, plus what the server's event loop and the machine spent. */
interface CaseResult extends WrkResult {
  /** CPU time of the server's main thread (its event loop) per request, in µs. */
  loopUsPerRequest: number;
  /** Share of the machine's CPU time the hypervisor stole during the case, in %. */
  stealPercent: number;
}

/** The machine's CPU time in clock ticks (`/proc/stat`): in all, and stolen by the hypervisor. */
function machineTicks(): { total: number; steal: number } {
  const values = Deno.readTextFileSync("/proc/stat").split("\n")[0].trim().split(/\s+/)
    .slice(1, 9).map(Number);
  return { total: values.reduce((sum, value) => sum + value, 0), steal: values[7] };
}

function rssKb(pid: number): { rss: number; peak: number } {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return {
    rss: Number(status.match(/VmRSS:\s+(\d+)/)?.[1] ?? 0),
    peak: Number(status.match(/VmHWM:\s+(\d+)/)?.[1] ?? 0),
  };
}

async function main() {
  ensureDebianPackage("wrk", ["wrk"]);
  const home = await Deno.makeTempDir({ prefix: "agent-bench-" });
  const children: Deno.ChildProcess[] = [];
  try {
    const body = payload();
    const script = join(home, "post.lua");
    await Deno.writeTextFile(script, luaScript(body));
    await writeGatewayHome(home);

    const ceiling = await spawn(["eval", CEILING], {}, /listening on (\d+)/);
    children.push(ceiling.child);
    const sink = await spawn(["eval", SINK], {}, /listening on (\d+)/);
    children.push(sink.child);
    const llm = await spawn(["eval", HANG], {}, /listening on (\d+)/);
    children.push(llm.child);
    const gateway = await spawnGateway({
      root: ROOT,
      home,
      env: {
        TELEGRAM_API_URL: `http://127.0.0.1:${sink.match[1]}`,
        TELEGRAM_BOT_TOKEN: "1:bench",
        OPENAI_BASE_URL: `http://127.0.0.1:${llm.match[1]}/v1`,
        OPENAI_API_KEY: "bench",
        // Its dashboard on any free port, beside whatever else runs on the machine.
        DASHBOARD_PORT: "0",
      },
      denoFlags: Deno.env.get("BENCH_GATEWAY_FLAGS")?.split(" ").filter(Boolean),
    });
    children.push(gateway.child);
    const gatewayUrl = gateway.url;
    const dashboard = await dashboardUrl(home);

    console.log(
      `wrk: ${CONNECTIONS} connections, ${SECONDS} s per case, ${body.length}-byte signed body\n`,
    );
    // Warm up JIT and the database before measuring.
    await wrk(`${gatewayUrl}/webhooks/agent`, script, WARMUP_SECONDS, CONNECTIONS);
    await wrk(`${gatewayUrl}/webhooks/direct`, script, WARMUP_SECONDS, CONNECTIONS);
    // Each case starts with the page cache written back, so none pays for the writes of the
    // one before (the yardstick's WAL, which is never checkpointed, grows by hundreds of MB).
    const measure = async (url: string, pid: number): Promise<CaseResult> => {
      await new Deno.Command("sync").output();
      const loopBefore = cpuTimeUs(`/proc/${pid}/task/${pid}/stat`);
      const machineBefore = machineTicks();
      const result = await wrk(url, script, SECONDS, CONNECTIONS);
      const loopUs = cpuTimeUs(`/proc/${pid}/task/${pid}/stat`) - loopBefore;
      const machine = machineTicks();
      return {
        ...result,
        loopUsPerRequest: loopUs / Math.max(1, result.requests),
        stealPercent: 100 * (machine.steal - machineBefore.steal) /
          Math.max(1, machine.total - machineBefore.total),
      };
    };
    const rounds: Round[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      // (m) starts afresh each round, on a new file, so its WAL does not grow across rounds.
      const dbPath = join(home, `minimal-${round}.db`);
      const minimal = await spawn(["eval", MINIMAL, dbPath], {}, /listening on (\d+)/);
      try {
        const minimalUrl = `http://127.0.0.1:${minimal.match[1]}/`;
        await wrk(minimalUrl, script, WARMUP_SECONDS, CONNECTIONS);
        const a = await measure(`http://127.0.0.1:${ceiling.match[1]}/`, ceiling.child.pid);
        const b = await measure(`${gatewayUrl}/webhooks/direct`, gateway.child.pid);
        const agent = () => measure(`${gatewayUrl}/webhooks/agent`, gateway.child.pid);
        const followed = async () => {
          const client = await followEventsPage(dashboard, home);
          const result = await agent();
          const read = await client.stop();
          console.log(`  (d) the client read ${read.changes} changes, ${read.bytes} bytes`);
          return result;
        };
        // (c) and (d) swap places every other round, so neither always runs on a fuller database.
        let c = round % 2 === 1 ? await agent() : undefined;
        const d = await followed();
        c ??= await agent();
        const m = await measure(minimalUrl, minimal.child.pid);
        rounds.push({ a, b, c, d, m });
        console.log(
          `round ${round}: a ${a.rps.toFixed(0)}, m ${m.rps.toFixed(0)}, b ${b.rps.toFixed(0)}, ` +
            `c ${c.rps.toFixed(0)}, d ${d.rps.toFixed(0)} req/s (p99 c ${
              c.p99Ms.toFixed(1)
            } ms, d ${d.p99Ms.toFixed(1)} ms, m ${m.p99Ms.toFixed(1)} ms); ` +
            `c/a ${(c.rps / a.rps).toFixed(2)}, c/m ${(c.rps / m.rps).toFixed(2)}, ` +
            `c/b ${(c.rps / b.rps).toFixed(2)}, d/c ${(d.rps / c.rps).toFixed(2)}; ` +
            `event loop µs/request c ` +
            `${c.loopUsPerRequest.toFixed(0)}, m ${m.loopUsPerRequest.toFixed(0)}; ` +
            `steal ${
              Math.max(...[a, b, c, d, m].map((result) => result.stealPercent))
                .toFixed(0)
            }% at most`,
        );
      } finally {
        minimal.child.kill("SIGKILL");
        await minimal.child.status;
        for (const suffix of ["", "-wal", "-shm"]) {
          await Deno.remove(dbPath + suffix).catch(() => {});
        }
      }
    }

    const medianOf = (
      name: keyof Round,
      field: "rps" | "p50Ms" | "p99Ms" | "loopUsPerRequest" | "stealPercent",
    ) => median(rounds.map((round) => round[name][field]));
    const ratio = (top: keyof Round, bottom: keyof Round) =>
      median(rounds.map((round) => round[top].rps / round[bottom].rps));
    const row = (name: string, key: keyof Round) =>
      `${name.padEnd(40)} ${medianOf(key, "rps").toFixed(0).padStart(8)} ${
        medianOf(key, "p50Ms").toFixed(2).padStart(8)
      } ${medianOf(key, "p99Ms").toFixed(2).padStart(8)} ${
        String(rounds.reduce((sum, round) => sum + round[key].non2xx, 0)).padStart(8)
      } ${medianOf(key, "loopUsPerRequest").toFixed(0).padStart(8)} ${
        medianOf(key, "stealPercent").toFixed(1).padStart(6)
      }`;
    console.log(
      `\nmedian of ${ROUNDS} round(s); non-2xx summed; loop µs: the server's event-loop CPU ` +
        `per request; steal: CPU time the hypervisor took, in %\n${"case".padEnd(40)} ${
          "req/s".padStart(8)
        } ${"p50 ms".padStart(8)} ${"p99 ms".padStart(8)} ${"non-2xx".padStart(8)} ${
          "loop µs".padStart(8)
        } ${"steal".padStart(6)}`,
    );
    console.log(row("(a) plain Deno.serve, 202", "a"));
    console.log(row("(m) minimal verify + SQLite insert, 202", "m"));
    console.log(row("(b) gateway, direct delivery to sink", "b"));
    console.log(row("(c) gateway, agent mode (durable + 202)", "c"));
    console.log(row("(d) (c) with a dashboard client live", "d"));
    console.log(
      `\nratios (median of each round's): b/a ${ratio("b", "a").toFixed(2)}  c/a ${
        ratio("c", "a").toFixed(2)
      }  c/b ${ratio("c", "b").toFixed(2)}  m/a ${ratio("m", "a").toFixed(2)}  c/m ${
        ratio("c", "m").toFixed(2)
      }; event-loop CPU per request, m/c: ${
        median(rounds.map((round) => round.m.loopUsPerRequest / round.c.loopUsPerRequest))
          .toFixed(2)
      }`,
    );
    const cRps = medianOf("c", "rps");
    console.log(
      `targets: c ≥ 10000 req/s: ${cRps >= 10_000 ? "met" : "NOT met"} (m: ${
        medianOf("m", "rps").toFixed(0)
      }); c p99 < 10 ms: ${medianOf("c", "p99Ms") < 10 ? "met" : "NOT met"} (${
        medianOf("c", "p99Ms").toFixed(1)
      } ms; m: ${medianOf("m", "p99Ms").toFixed(1)} ms); c/b ≥ 0.8: ${
        ratio("c", "b") >= 0.8 ? "met" : "NOT met"
      }`,
    );
    const dc = rounds.map((round) => round.d.rps / round.c.rps);
    console.log(
      `dashboard client costs ≤ 5% (d/c ≥ 0.95): ${ratio("d", "c") >= 0.95 ? "met" : "NOT met"} ` +
        `(d/c ${ratio("d", "c").toFixed(3)}; rounds ${Math.min(...dc).toFixed(3)} to ${
          Math.max(...dc).toFixed(3)
        }); event-loop CPU per request, d/c: ${
          median(rounds.map((round) => round.d.loopUsPerRequest / round.c.loopUsPerRequest))
            .toFixed(2)
        }`,
    );

    if (IDS > 0) {
      const pid = gateway.child.pid;
      const { DatabaseSync } = await import("node:sqlite");
      const db = new DatabaseSync(join(home, "state", "gateway.db"), { readOnly: true });
      const count = () =>
        Number(
          (db.prepare("SELECT count(*) AS n FROM events WHERE subscription = 'agent'").get() as {
            n: number;
          }).n,
        );
      console.log(`\nRSS of the gateway while storing ${IDS} distinct delivery ids (agent mode):`);
      console.log(
        `${"ids stored".padStart(12)} ${"RSS MiB".padStart(9)} ${"peak MiB".padStart(9)}`,
      );
      // A first row with what the rounds stored, then one per wrk run until IDS.
      for (let stored = count(), first = true; first || stored < IDS; first = false) {
        if (!first) {
          await wrk(
            `${gatewayUrl}/webhooks/agent`,
            script,
            Math.max(2, Math.min(20, Math.ceil((IDS - stored) / Math.max(1000, cRps)))),
            CONNECTIONS,
          );
          stored = count();
        }
        const mem = rssKb(pid);
        console.log(
          `${String(stored).padStart(12)} ${(mem.rss / 1024).toFixed(1).padStart(9)} ${
            (mem.peak / 1024).toFixed(1).padStart(9)
          }`,
        );
      }
      db.close();
    }
  } finally {
    await cleanUp(children, home);
  }
}

await main();
