/**
 * Benchmark of the state store's durable write, without HTTP: `accept()` of agent-mode events
 * (2 KB payload, a random delivery id each, so every event claims an idempotency key) in waves
 * of 20 concurrent calls, the batch size group commit sees under the ingest benchmark's load.
 *
 * The baseline, in the same run and the same waves, is the least a durable deduplicating write
 * can be: one `INSERT OR IGNORE` of (delivery id, payload) into a table with a unique index on
 * the delivery id, 20 rows per transaction. Both run in WAL mode with `synchronous=NORMAL`; the
 * store also runs its background checkpoints, as the gateway does.
 *
 * Run: `deno task bench:store [--events 40000] [--rounds 3]`. It prints µs per event for each
 * round and the ratio store / baseline.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openStateStore } from "../lib/state/sqlite/mod.ts";
import { agentEvent } from "./_shared.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    events: { type: "string", default: "40000" },
    rounds: { type: "string", default: "3" },
  },
});
const EVENTS = Number(flags.events);
const ROUNDS = Number(flags.rounds);
const WAVE = 20;

const payload = JSON.stringify({
  action: "opened",
  issue: { number: 1, title: "Crash on start", body: "x".repeat(1950) },
  repository: { full_name: "octo/repo" },
});

const prompt = "Summarise issue Crash on start on octo/repo";

/** µs per event of the real store's accept(), in waves of WAVE concurrent calls. */
async function storeRound(dir: string): Promise<number> {
  const store = openStateStore(join(dir, "store.db"));
  const started = performance.now();
  for (let done = 0; done < EVENTS; done += WAVE) {
    const wave = Array.from(
      { length: WAVE },
      () => store.accept(agentEvent({ payload, prompt, receivedAtMs: Date.now() })),
    );
    for (const result of await Promise.all(wave)) {
      if (result.status !== "accepted") throw new Error(`not accepted: ${result.status}`);
    }
  }
  const us = ((performance.now() - started) * 1000) / EVENTS;
  await store.close();
  return us;
}

/** µs per event of the baseline: INSERT OR IGNORE (delivery_id UNIQUE, payload), WAVE a commit. */
function baselineRound(dir: string): number {
  const db = new DatabaseSync(join(dir, "baseline.db"));
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0");
  db.exec("CREATE TABLE events (id INTEGER PRIMARY KEY, delivery_id TEXT UNIQUE, payload TEXT)");
  const insert = db.prepare("INSERT OR IGNORE INTO events (delivery_id, payload) VALUES (?, ?)");
  const started = performance.now();
  for (let done = 0; done < EVENTS; done += WAVE) {
    db.exec("BEGIN IMMEDIATE");
    for (let i = 0; i < WAVE; i++) insert.run(crypto.randomUUID(), payload);
    db.exec("COMMIT");
  }
  const us = ((performance.now() - started) * 1000) / EVENTS;
  db.close();
  return us;
}

console.log(`${EVENTS} events per round, waves of ${WAVE}, 2 KB payload\n`);
console.log("round   store µs/event   baseline µs/event   store/baseline");
for (let round = 1; round <= ROUNDS; round++) {
  const dir = await Deno.makeTempDir({ prefix: "agent-bench-store-" });
  try {
    const baseline = baselineRound(dir);
    const store = await storeRound(dir);
    console.log(
      `${String(round).padStart(5)}   ${store.toFixed(1).padStart(14)}   ${
        baseline.toFixed(1).padStart(17)
      }   ${(store / baseline).toFixed(2).padStart(14)}`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
