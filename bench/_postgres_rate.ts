/**
 * Part of `bench:postgres`: what a per-subscription rate limit that holds across gateways costs
 * the durable ingest on PostgreSQL, measured at the store. Two stores ("gateways", a pool of
 * their own each) accept agent-mode events of one subscription as fast as they can:
 *
 * - `accept only`: no limit, the floor;
 * - `counted in the database`: before each accept, the subscription's token bucket is taken from
 *   in one upsert of its row (`INSERT ... ON CONFLICT DO UPDATE`), a committed write per request
 *   on one row that every gateway updates;
 * - `per gateway`: each gateway keeps its share of the limit in memory (the limit divided by the
 *   live gateways it reads from a heartbeat table every few seconds): nothing per request.
 *
 * @module
 */
import postgres from "postgres";
import { openPostgresStore } from "../lib/state/postgres/mod.ts";
import type { StateStore } from "../lib/state/mod.ts";
import { agentEvent, payload } from "./_shared.ts";

/** One case's figures. */
export interface RateFigures {
  name: string;
  eventsPerSecond: number;
  /** Median wall time of one request's store work, in ms. */
  medianMs: number;
  /** 99th percentile, in ms. */
  p99Ms: number;
}

const BUCKET_SQL = "CREATE TABLE IF NOT EXISTS bench_rate (key text PRIMARY KEY, " +
  "tokens double precision NOT NULL, updated_at bigint NOT NULL)";

// The token bucket of `rate_limit.ts`, in one statement: refill by the time passed, take one
// when one is there; the row is locked until the statement's commit.
const TAKE_SQL =
  "INSERT INTO bench_rate AS b (key, tokens, updated_at) VALUES ($1, $2::float8 - 1, $3) " +
  "ON CONFLICT (key) DO UPDATE SET tokens = CASE WHEN least($2, b.tokens + " +
  "($3 - b.updated_at) * $2 / 60000.0) >= 1 THEN least($2, b.tokens + ($3 - b.updated_at) * " +
  "$2 / 60000.0) - 1 ELSE least($2, b.tokens + ($3 - b.updated_at) * $2 / 60000.0) END, " +
  "updated_at = $3 RETURNING tokens";

/**
 * Runs the three cases, each for `seconds`, with `concurrency` requests under way per gateway.
 * @param url the database (an empty schema)
 * @returns the figures of each case, in the order above
 */
export async function benchRateLimits(
  url: string,
  options: { seconds: number; concurrency: number },
): Promise<RateFigures[]> {
  const stores = [
    await openPostgresStore(url, { poolSize: 10 }),
    await openPostgresStore(url, { poolSize: 10 }),
  ];
  const counters = [postgres(url, { max: 10 }), postgres(url, { max: 10 })];
  await counters[0].unsafe(BUCKET_SQL);
  const body = payload();
  const accept = (store: StateStore) =>
    store.accept(agentEvent({ payload: body, prompt: "p", receivedAtMs: Date.now() }));
  try {
    const figures: RateFigures[] = [];
    figures.push(await measure("accept only", options, (g) => accept(stores[g])));
    figures.push(
      await measure("counted in the database", options, async (g) => {
        await counters[g].unsafe(TAKE_SQL, ["github", 1e9, Date.now()], { prepare: true });
        await accept(stores[g]);
      }),
    );
    // What the per-gateway limit adds per request is a Map lookup: the same as accept only,
    // measured again so that the two figures come from the same minute of the machine.
    const buckets = new Map<string, number>();
    figures.push(
      await measure("per gateway (in memory)", options, async (g) => {
        buckets.set(`${g}`, (buckets.get(`${g}`) ?? 0) + 1);
        await accept(stores[g]);
      }),
    );
    return figures;
  } finally {
    for (const store of stores) await store.close();
    for (const sql of counters) await sql.end();
  }
}

/** Runs `request` in a closed loop, `concurrency` at once per gateway, for `seconds`. */
async function measure(
  name: string,
  { seconds, concurrency }: { seconds: number; concurrency: number },
  request: (gateway: number) => Promise<void | unknown>,
): Promise<RateFigures> {
  const times: number[] = [];
  const endAt = performance.now() + seconds * 1000;
  const loop = async (gateway: number) => {
    while (performance.now() < endAt) {
      const start = performance.now();
      await request(gateway);
      times.push(performance.now() - start);
    }
  };
  const started = performance.now();
  const loops = [];
  for (let i = 0; i < concurrency; i++) loops.push(loop(0), loop(1));
  await Promise.all(loops);
  const elapsed = (performance.now() - started) / 1000;
  times.sort((a, b) => a - b);
  return {
    name,
    eventsPerSecond: Math.round(times.length / elapsed),
    medianMs: round(times[Math.floor(times.length / 2)]),
    p99Ms: round(times[Math.floor(times.length * 0.99)]),
  };
}

const round = (ms: number) => Math.round(ms * 100) / 100;
