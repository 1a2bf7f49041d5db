/**
 * The stop sequence of a running gateway: the server drains while the worker stops claiming,
 * within one deadline; then what is left in memory is written out and the state database
 * closed.
 *
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { StateStore } from "../lib/state/mod.ts";
import { settledWithin } from "../lib/worker/wait.ts";
import type { Pruning } from "./_prune.ts";
import type { RefusalLog } from "./ingest/mod.ts";
import type { StateFileWatch } from "./_state_watch.ts";
import type { WorkerSetup } from "./_worker_setup.ts";

const workerLog = getLogger(["agent", "worker"]);

/** What a running gateway stops. */
export interface Running {
  /** The lock that keeps a second gateway off the home, when this one holds it. */
  lock: Deno.FsFile | undefined;
  store: StateStore;
  /** The watch of the state database's file. */
  watch: StateFileWatch;
  /** The webhook listener; none when the gateway does not ingest. */
  server: Deno.HttpServer | undefined;
  pruning: Pruning;
  refusals: RefusalLog;
  refusalWindows: ReturnType<typeof setInterval>;
  setup: WorkerSetup;
}

/**
 * Stops a running gateway gracefully (`RunningGateway.stop`): no new connections; requests in
 * flight and running agent work get up to `deadlineMs` in all, or until `hurry` aborts; then
 * the refusals left out are counted, held direct-delivery records written, and the store and
 * its lock closed.
 * @param running what the gateway's start made
 * @param options `deadlineMs`: the wait for requests and agent work, in milliseconds; `hurry`:
 *   ends the wait early (a second Ctrl-C)
 * @returns once the store is closed; never throws for slow requests or agent runs
 */
export async function stopGateway(
  { lock, store, watch, server, pruning, refusals, refusalWindows, setup }: Running,
  { deadlineMs, hurry }: { deadlineMs: number; hurry?: AbortSignal },
): Promise<void> {
  pruning.stop();
  await watch.stop();
  // Both at once, within the same deadline: the worker stops claiming now, so the events
  // accepted meanwhile, and those queued, wait for the next start instead of being started
  // while the server drains and cut off at the deadline. shutdown() waits for every
  // connection to close, and a sender that stalls in the middle of a body keeps its
  // connection open: past the deadline the stop goes on without it (the process exits
  // after this, which closes it).
  await Promise.all([
    server && settledWithin(server.shutdown(), deadlineMs, { signal: hurry }),
    setup.worker.stop({ deadlineMs, hurry }),
  ]);
  clearInterval(refusalWindows);
  refusals.flush();
  // Direct deliveries that ended while the server drained may have held their records.
  const unrecorded = await setup.worker.flushHeld();
  if (unrecorded > 0) {
    workerLog.error("stopped with {count} writes not recorded", { count: unrecorded });
  }
  await store.close();
  lock?.close();
}
