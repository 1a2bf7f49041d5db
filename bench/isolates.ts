/**
 * What serving HTTP in two isolates (two event loops, in two threads of one process) would give
 * on this machine, measured on the yardstick of `bench/ingest.ts` rather than on the gateway:
 *
 *   (a1) a plain `Deno.serve` answering 202, in one isolate; (a2) the same in two;
 *   (m1) the minimal durable ingest (HMAC check, JSON parse, group-committed SQLite insert, 202)
 *        in one isolate; (m2) the same in two isolates, each with its own SQLite connection
 *        to the one database.
 *
 * Both isolates listen on one port (`reusePort`: Linux spreads the connections between them).
 * Two SQLite connections that write at once make one of them wait in SQLite's busy handler,
 * which sleeps for milliseconds at a time; so each isolate takes a lock in shared memory before
 * its group commit (`Atomics.waitAsync`: the waiting isolate goes on serving HTTP meanwhile) and
 * hands it over as soon as it commits. The one-isolate cases run the same code, the lock
 * uncontended.
 *
 * Each round measures the four cases once, in an order that alternates between rounds, with
 * wrk on one thread and 32 connections (as `deno task bench`). It prints each round, the
 * medians of req/s, p50 and p99, the CPU time of the whole server process per request (both
 * isolates' threads and Deno's own), and the medians of each round's ratios a2/a1 and m2/m1.
 *
 * Usage: deno task bench:isolates [--seconds 10] [--rounds 3]
 *
 * @module
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { median } from "./_median.ts";
import {
  cleanUp,
  cpuTimeUs,
  ensureDebianPackage,
  luaScript,
  payload,
  SECRET,
  spawn,
  wrk,
  type WrkResult,
} from "./_shared.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    seconds: { type: "string", default: "10" },
    rounds: { type: "string", default: "3" },
  },
});
const SECONDS = Number(flags.seconds);
const ROUNDS = Math.max(1, Math.floor(Number(flags.rounds)) || 1);
const CONNECTIONS = 32;

/**
 * The servers, as one module: `deno run --unstable-net server.ts <kind> <isolates> [db]`, where
 * `kind` is `ceiling` or `minimal`. It prints `listening on <port>` once every isolate listens.
 * The first isolate binds port 0 and the others the port it got.
 */
const SERVERS = `
import { createHmac, timingSafeEqual } from "node:crypto";
import { DatabaseSync } from "node:sqlite";

function ceiling(port, onListen) {
  Deno.serve({ hostname: "127.0.0.1", port, reusePort: true, onListen },
    async (request) => { await request.arrayBuffer(); return new Response('{"status":"accepted"}', { status: 202, headers: { "content-type": "application/json" } }); });
}

function minimal(port, onListen, dbPath, lockBuffer) {
  const lock = new Int32Array(lockBuffer);
  const db = new DatabaseSync(dbPath);
  db.exec("PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0");
  db.exec("CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, delivery_id TEXT UNIQUE, payload TEXT)");
  const insert = db.prepare("INSERT OR IGNORE INTO events (delivery_id, payload) VALUES (?, ?)");
  const decoder = new TextDecoder();
  let batch = [];
  let committing = false;
  async function commit() {
    committing = true;
    // The lock: 0 free, 1 held. A waiting isolate awaits the holder's notify.
    while (Atomics.compareExchange(lock, 0, 0, 1) !== 0) {
      const wait = Atomics.waitAsync(lock, 0, 1);
      if (wait.async) await wait.value;
    }
    const items = batch;
    batch = [];
    try {
      db.exec("BEGIN IMMEDIATE");
      const fresh = items.map((item) => insert.run(item.id, item.payload).changes === 1);
      db.exec("COMMIT");
      items.forEach((item, i) => item.resolve(fresh[i]));
    } finally {
      Atomics.store(lock, 0, 0);
      Atomics.notify(lock, 0, 1);
      committing = false;
    }
    if (batch.length > 0) setImmediate(commit);
  }
  Deno.serve({ hostname: "127.0.0.1", port, reusePort: true, onListen },
    async (request) => {
      const body = new Uint8Array(await request.arrayBuffer());
      const given = Buffer.from((request.headers.get("x-hub-signature-256") ?? "").slice(7), "hex");
      const expected = createHmac("sha256", ${JSON.stringify(SECRET)}).update(body).digest();
      if (given.length !== 32 || !timingSafeEqual(given, expected)) return new Response("{}", { status: 401 });
      const payload = decoder.decode(body);
      JSON.parse(payload);
      const id = request.headers.get("x-github-delivery");
      const fresh = await new Promise((resolve) => {
        if (batch.push({ id, payload, resolve }) === 1 && !committing) setImmediate(commit);
      });
      return Response.json({ status: fresh ? "accepted" : "duplicate", delivery_id: id }, { status: 202 });
    });
}

function serve({ kind, port, dbPath, lock }, onListen) {
  if (kind === "ceiling") ceiling(port, onListen);
  else minimal(port, onListen, dbPath, lock);
}

if (typeof WorkerGlobalScope !== "undefined" && self instanceof WorkerGlobalScope) {
  self.onmessage = ({ data }) => serve(data, () => self.postMessage("listening"));
} else {
  const [kind, isolates, dbPath] = Deno.args;
  const lock = new SharedArrayBuffer(4);
  const port = await new Promise((resolve) => serve({ kind, port: 0, dbPath, lock }, (a) => resolve(a.port)));
  for (let i = 1; i < Number(isolates); i++) {
    const worker = new Worker(import.meta.url, { type: "module" });
    const listening = new Promise((resolve) => worker.onmessage = resolve);
    worker.postMessage({ kind, port, dbPath, lock });
    await listening;
  }
  console.log("listening on " + port);
}
`;

/** The four cases, by name: what they serve and in how many isolates. */
const CASES = {
  a1: { kind: "ceiling", isolates: 1 },
  a2: { kind: "ceiling", isolates: 2 },
  m1: { kind: "minimal", isolates: 1 },
  m2: { kind: "minimal", isolates: 2 },
} as const;
type CaseName = keyof typeof CASES;

/** A case's figures: wrk's, plus the server process's CPU time per request. */
interface CaseResult extends WrkResult {
  /** CPU time of the whole server process (every thread) per request, in µs. */
  cpuUsPerRequest: number;
}

/** Starts one case's server on a fresh database, warms it up, measures it, and stops it. */
async function measure(
  name: CaseName,
  home: string,
  serverPath: string,
  script: string,
): Promise<CaseResult> {
  const { kind, isolates } = CASES[name];
  const dbPath = join(home, `${name}.db`);
  const server = await spawn(
    ["run", "--allow-all", "--unstable-net", serverPath, kind, String(isolates), dbPath],
    {},
    /listening on (\d+)/,
  );
  try {
    const url = `http://127.0.0.1:${server.match[1]}/`;
    await wrk(url, script, 2, CONNECTIONS);
    await new Deno.Command("sync").output();
    const before = cpuTimeUs(`/proc/${server.child.pid}/stat`);
    const result = await wrk(url, script, SECONDS, CONNECTIONS);
    const used = cpuTimeUs(`/proc/${server.child.pid}/stat`) - before;
    return {
      ...result,
      cpuUsPerRequest: used / Math.max(1, result.requests),
    };
  } finally {
    server.child.kill("SIGKILL");
    await server.child.status;
    for (const suffix of ["", "-wal", "-shm"]) {
      await Deno.remove(dbPath + suffix).catch(() => {});
    }
  }
}

async function main() {
  ensureDebianPackage("wrk", ["wrk"]);
  const home = await Deno.makeTempDir({ prefix: "agent-bench-isolates-" });
  try {
    const script = join(home, "post.lua");
    const body = payload();
    await Deno.writeTextFile(script, luaScript(body));
    const serverPath = join(home, "server.js");
    await Deno.writeTextFile(serverPath, SERVERS);
    console.log(
      `wrk: 1 thread, ${CONNECTIONS} connections, ${SECONDS} s per case, ` +
        `${body.length}-byte signed body\n`,
    );
    const rounds: Record<CaseName, CaseResult>[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      // Odd rounds one isolate first, even rounds two, so drift reaches both alike.
      const order: CaseName[] = round % 2 ? ["a1", "a2", "m1", "m2"] : ["a2", "a1", "m2", "m1"];
      const results = {} as Record<CaseName, CaseResult>;
      for (const name of order) results[name] = await measure(name, home, serverPath, script);
      rounds.push(results);
      console.log(
        `round ${round}: ` +
          order.map((name) =>
            `${name} ${results[name].rps.toFixed(0)} req/s (p99 ${
              results[name].p99Ms.toFixed(1)
            } ms)`
          ).join(", "),
      );
    }
    const medianOf = (name: CaseName, field: keyof CaseResult) =>
      median(rounds.map((round) => round[name][field]));
    console.log(
      `\nmedian of ${ROUNDS} round(s); CPU µs: the whole server process's CPU time per request\n` +
        `${"case".padEnd(46)} ${"req/s".padStart(8)} ${"p50 ms".padStart(8)} ${
          "p99 ms".padStart(8)
        } ${"non-2xx".padStart(8)} ${"CPU µs".padStart(8)}`,
    );
    const labels: Record<CaseName, string> = {
      a1: "(a1) plain Deno.serve, 1 isolate",
      a2: "(a2) plain Deno.serve, 2 isolates",
      m1: "(m1) minimal durable ingest, 1 isolate",
      m2: "(m2) minimal durable ingest, 2 isolates",
    };
    for (const name of Object.keys(CASES) as CaseName[]) {
      console.log(
        `${labels[name].padEnd(46)} ${medianOf(name, "rps").toFixed(0).padStart(8)} ${
          medianOf(name, "p50Ms").toFixed(2).padStart(8)
        } ${medianOf(name, "p99Ms").toFixed(2).padStart(8)} ${
          String(rounds.reduce((sum, round) => sum + round[name].non2xx, 0)).padStart(8)
        } ${medianOf(name, "cpuUsPerRequest").toFixed(0).padStart(8)}`,
      );
    }
    const ratio = (top: CaseName, bottom: CaseName, field: "rps" | "p99Ms") =>
      median(rounds.map((round) => round[top][field] / round[bottom][field])).toFixed(2);
    console.log(
      `\nratios (median of each round's): req/s a2/a1 ${ratio("a2", "a1", "rps")}, m2/m1 ${
        ratio("m2", "m1", "rps")
      }; p99 a2/a1 ${ratio("a2", "a1", "p99Ms")}, m2/m1 ${ratio("m2", "m1", "p99Ms")}`,
    );
  } finally {
    await cleanUp([], home);
  }
}

await main();
