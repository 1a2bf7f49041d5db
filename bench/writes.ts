/**
 * Benchmark of what the state database writes to disk over an agent-mode event's life, for
 * users on small or worn disks (an SD card, a cheap VPS volume): the bytes the process hands to
 * `write` (`wchar` in `/proc/self/io`: the WAL, the checkpoints into the database file, done
 * on the checkpointer's thread, and nothing else, since nothing else writes) per event, at
 * each step the gateway takes:
 *
 *   accept:  the ingest path's insert, in waves of 20 concurrent events (group commit);
 *   worker:  the claim (8 at a time), the agent's saved answer (500 bytes), the delivery;
 *   prune:   retention's delete, which overwrites the freed pages with zeros (secure_delete).
 *
 * with payloads of 2 KB (a small Stripe or Slack event), 8 KB (a GitHub push or issue) and
 * 25 KB (a GitHub pull request). Each step also prints how long it took per event.
 * The worker's steps rewrite the event's row, payload included, at each of its three updates.
 *
 * Run: `deno task bench:writes [--events 2000]`.
 *
 * @module
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openStateStore } from "../lib/state/sqlite/mod.ts";
import { agentEvent } from "./_shared.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: { events: { type: "string", default: "2000" } },
});
const EVENTS = Number(flags.events);
const WAVE = 20;
const CLAIM = 8;
const SIZES = [2048, 8192, 25600];

/** Bytes this process has passed to write calls so far, all threads. */
function bytesWritten(): number {
  const io = Deno.readTextFileSync("/proc/self/io");
  return Number(io.match(/^wchar: (\d+)$/m)?.[1]);
}

/** KiB written and µs taken per event by one step. */
interface StepCost {
  kib: number;
  us: number;
}

/** Runs `step`, then returns what it wrote and how long it took, per event. */
async function measure(step: () => Promise<void> | void): Promise<StepCost> {
  const before = bytesWritten();
  const started = performance.now();
  await step();
  const us = ((performance.now() - started) * 1000) / EVENTS;
  // The checkpointer runs after commits on its own thread: let its last pass finish.
  await new Promise((resolve) => setTimeout(resolve, 300));
  return { kib: (bytesWritten() - before) / 1024 / EVENTS, us };
}

/** One payload size through the three steps, in a fresh database. */
async function life(size: number): Promise<StepCost[]> {
  const dir = await Deno.makeTempDir({ prefix: "agent-bench-writes-" });
  const store = openStateStore(join(dir, "gateway.db"));
  const payload = JSON.stringify({ action: "opened", body: "x".repeat(size - 30) });
  const prompt = "Summarise this issue for the team: " + "y".repeat(265);
  const answer = "The issue reports " + "z".repeat(482);
  const day = 86_400_000;
  const receivedAtMs = Date.now() - 30 * day;
  try {
    const accept = await measure(async () => {
      for (let done = 0; done < EVENTS; done += WAVE) {
        await Promise.all(
          Array.from(
            { length: WAVE },
            () => store.accept(agentEvent({ payload, prompt, receivedAtMs })),
          ),
        );
      }
    });
    const worker = await measure(async () => {
      let done = 0;
      while (done < EVENTS) {
        const claimed = await store.claimDue(Date.now(), CLAIM);
        if (claimed.length === 0) throw new Error(`only ${done} of ${EVENTS} events were due`);
        for (const event of claimed) {
          await store.saveResponse(event.id, answer);
          await store.markDelivered(event.id, Date.now());
          done += 1;
        }
      }
    });
    const prune = await measure(async () => {
      let deleted = 0;
      while (deleted < EVENTS) {
        const { events } = await store.prune(Date.now(), { retentionDays: 7 });
        if (events === 0) throw new Error(`only ${deleted} of ${EVENTS} events were pruned`);
        deleted += events;
      }
    });
    return [accept, worker, prune];
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

console.log(
  `${EVENTS} agent-mode events per payload size: KiB written (and µs taken) per event\n`,
);
console.log("payload        accept          worker           prune           whole life");
for (const size of SIZES) {
  const steps = await life(size);
  const cell = ({ kib, us }: StepCost) => `${kib.toFixed(1)} (${us.toFixed(0)} µs)`.padEnd(16);
  const total = steps.reduce((sum, step) => sum + step.kib, 0);
  console.log(
    `${`${size / 1024} KB`.padEnd(15)}${steps.map(cell).join("")}${total.toFixed(1)} KiB`,
  );
}
