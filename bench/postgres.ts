/**
 * Benchmark of the ingest path on PostgreSQL (issue 24, docs/scaling.md), on a throwaway server
 * of Debian's `postgresql` (tests/fakes/postgres.ts) that flushes its commits to disk as a real
 * one does. Driven by `wrk` (installed from Debian when missing): a 2 KB JSON body signed as
 * GitHub signs, a fresh `X-GitHub-Delivery` per request, to an agent-mode subscription whose
 * agent runs never end (the LLM hangs), so only ingest is measured. In each of `--rounds`
 * rounds, the order turned every other round:
 *
 *   (s) one gateway on SQLite, the embedded default, for comparison;
 *   (p1) one gateway on PostgreSQL;
 *   (p2) two gateways on the same database, each taking half the connections (two wrk at
 *        once), their requests summed.
 *
 * Then the cost of a rate limit that holds across gateways, at the store: accepts per second
 * with no limit, with a token bucket counted in the database before each accept, and with each
 * gateway's share counted in memory (bench/_postgres_rate.ts).
 *
 * Usage: deno task bench:postgres [--seconds 10] [--warmup 2] [--connections 32] [--rounds 2]
 *   [--rate-seconds 5]
 *
 * @module
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startPostgres } from "../tests/fakes/postgres.ts";
import { median } from "./_median.ts";
import { benchRateLimits } from "./_postgres_rate.ts";
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
  type WrkResult,
} from "./_shared.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    seconds: { type: "string", default: "10" },
    warmup: { type: "string", default: "2" },
    connections: { type: "string", default: "32" },
    rounds: { type: "string", default: "2" },
    "rate-seconds": { type: "string", default: "5" },
  },
});
const SECONDS = Number(flags.seconds);
const WARMUP_SECONDS = Number(flags.warmup);
const CONNECTIONS = Number(flags.connections);
const ROUNDS = Math.max(1, Math.floor(Number(flags.rounds)) || 1);
const ROOT = new URL("..", import.meta.url).pathname;

/** The three cases' figures in one round. */
type Round = Record<"s" | "p1" | "p2", WrkResult>;

async function main() {
  ensureDebianPackage("wrk", ["wrk"]);
  const server = await startPostgres({ durable: true });
  const dir = await Deno.makeTempDir({ prefix: "agent-bench-pg-" });
  const children: Deno.ChildProcess[] = [];
  try {
    const body = payload();
    const script = join(dir, "post.lua");
    await Deno.writeTextFile(script, luaScript(body));
    const llm = await spawn(["eval", HANG], {}, /listening on (\d+)/);
    children.push(llm.child);
    const env = {
      OPENAI_BASE_URL: `http://127.0.0.1:${llm.match[1]}/v1`,
      OPENAI_API_KEY: "bench",
      DASHBOARD_PORT: "0",
    };
    const schema = await server.createSchema();
    const homes = await writeHomes(dir, schema.url);
    const start = async (home: string, extra: Record<string, string> = {}) => {
      const gateway = await spawnGateway({ root: ROOT, home, env: { ...env, ...extra } });
      children.push(gateway.child);
      return `${gateway.url}/webhooks/agent`;
    };
    const sqlite = await start(homes.sqlite);
    const pg = [
      await start(homes.postgres[0], { DATABASE_URL: schema.url }),
      await start(homes.postgres[1], { DATABASE_URL: schema.url }),
    ];
    console.log(
      `wrk: ${CONNECTIONS} connections, ${SECONDS} s per case, ${body.length}-byte signed body, ` +
        `${navigator.hardwareConcurrency} cores\n`,
    );
    for (const url of [sqlite, ...pg]) await wrk(url, script, WARMUP_SECONDS, CONNECTIONS);
    const rounds: Round[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const cases = {
        s: () => measure([sqlite], script),
        p1: () => measure([pg[0]], script),
        p2: () => measure(pg, script),
      };
      const order = (round % 2 ? ["s", "p1", "p2"] : ["p2", "p1", "s"]) as (keyof Round)[];
      const result: Partial<Round> = {};
      for (const name of order) result[name] = await cases[name]();
      rounds.push(result as Round);
      console.log(`round ${round}: ${describe(result as Round)}`);
    }
    printMedians(rounds);
    await rateLimits(server);
  } finally {
    await cleanUp(children, dir);
    await server.stop();
  }
}

/**
 * Writes a SQLite home and two PostgreSQL homes (loopback, port 0, 2 agent runs at once), and
 * moves the subscriptions into the database with `agent state migrate --to postgres`.
 */
async function writeHomes(dir: string, url: string) {
  const sqlite = join(dir, "sqlite");
  const postgres = [join(dir, "pg-1"), join(dir, "pg-2")];
  for (const home of [sqlite, ...postgres]) {
    await Deno.mkdir(home);
    await writeGatewayHome(home);
  }
  const migrate = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", join(ROOT, "main.ts"), "state", "migrate", "--to", "postgres"],
    env: { AGENT_HOME: postgres[0], DATABASE_URL: url },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!migrate.success) throw new Error(new TextDecoder().decode(migrate.stderr));
  for (const home of postgres) {
    const config = join(home, "config.yaml");
    await Deno.writeTextFile(config, "state:\n  backend: postgres\n", { append: true });
  }
  return { sqlite, postgres };
}

/** Runs wrk against each URL at once, sharing the connections; sums their figures. */
async function measure(urls: string[], script: string): Promise<WrkResult> {
  await new Deno.Command("sync").output();
  const connections = Math.max(1, Math.floor(CONNECTIONS / urls.length));
  const results = await Promise.all(
    urls.map((url) => wrk(url, script, SECONDS, connections)),
  );
  return {
    rps: results.reduce((sum, r) => sum + r.rps, 0),
    p50Ms: Math.max(...results.map((r) => r.p50Ms)),
    p99Ms: Math.max(...results.map((r) => r.p99Ms)),
    requests: results.reduce((sum, r) => sum + r.requests, 0),
    non2xx: results.reduce((sum, r) => sum + r.non2xx, 0),
  };
}

/** One line of a round's figures. */
function describe(round: Round): string {
  return (["s", "p1", "p2"] as const).map((name) => {
    const r = round[name];
    return `${name} ${r.rps.toFixed(0)} req/s (p50 ${r.p50Ms.toFixed(1)} ms, p99 ` +
      `${r.p99Ms.toFixed(1)} ms, ${r.non2xx} non-2xx)`;
  }).join(", ");
}

/** The median of each case over the rounds, and of the rounds' ratios. */
function printMedians(rounds: Round[]): void {
  console.log("\nmedians over the rounds:");
  for (const name of ["s", "p1", "p2"] as const) {
    const of = (pick: (r: WrkResult) => number) => median(rounds.map((r) => pick(r[name])));
    console.log(
      `  ${name.padEnd(3)} ${of((r) => r.rps).toFixed(0)} req/s, p50 ` +
        `${of((r) => r.p50Ms).toFixed(1)} ms, p99 ${of((r) => r.p99Ms).toFixed(1)} ms, ` +
        `non-2xx ${rounds.reduce((sum, r) => sum + r[name].non2xx, 0)}`,
    );
  }
  const ratio = (a: keyof Round, b: keyof Round) =>
    median(rounds.map((r) => r[a].rps / r[b].rps)).toFixed(2);
  console.log(`  p1/s ${ratio("p1", "s")}, p2/p1 ${ratio("p2", "p1")}`);
}

/** The rate limit's cost at the store, on a schema of its own. */
async function rateLimits(server: Awaited<ReturnType<typeof startPostgres>>): Promise<void> {
  const schema = await server.createSchema();
  try {
    const seconds = Number(flags["rate-seconds"]);
    console.log(`\nrate limits at the store: two stores, 16 accepts under way each, ${seconds} s`);
    for (const figures of await benchRateLimits(schema.url, { seconds, concurrency: 16 })) {
      console.log(
        `  ${figures.name.padEnd(26)} ${String(figures.eventsPerSecond).padStart(5)} accepts/s, ` +
          `median ${figures.medianMs} ms, p99 ${figures.p99Ms} ms`,
      );
    }
  } finally {
    await schema.drop();
  }
}

if (import.meta.main) await main();
