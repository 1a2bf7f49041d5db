/**
 * The worker following steps of the system clock: when it is set back, the queued events move
 * with it, so the backlog does not wait until the clock catches up.
 *
 * @module
 */
import type { StateStore } from "../state/mod.ts";
import { describe } from "./_core.ts";
import type { WorkerDeps } from "./mod.ts";

/** A wall clock set back by more than this, in ms, moves the queued events with it. */
const CLOCK_STEP_MS = 1000;

/**
 * Creates the check the worker makes on each pass of its loop, taking the clocks' first look now.
 * @param deps `now`: the wall clock, in ms since the epoch; `monotonicNow`: a clock that is
 *   never set, in ms (without it, no step is ever seen); `store`: whose queued events move;
 *   `log`: one line per step
 * @returns an async function that, when the system clock was set back (by NTP, or by hand) by more than
 *   a second since the last look, moves every queued event by as much: an event due before the
 *   step is due as soon after it, instead of waiting until the clock catches up (an hour's step
 *   held the backlog an hour while events accepted after it ran first)
 */
export function createClockFollower(
  deps: Pick<WorkerDeps, "now" | "monotonicNow" | "log"> & {
    store: Pick<StateStore, "moveQueued">;
  },
): () => Promise<void> {
  const { store, log } = deps;
  const monotonicNow = deps.monotonicNow ?? deps.now;
  /** The wall clock and the steady one when {@link followClockSteps} last looked. */
  let clockSeen = { wallMs: deps.now(), steadyMs: monotonicNow() };

  return async function followClockSteps(): Promise<void> {
    const wallMs = deps.now();
    const steadyMs = monotonicNow();
    const stepMs = wallMs - clockSeen.wallMs - (steadyMs - clockSeen.steadyMs);
    if (stepMs > -CLOCK_STEP_MS) {
      clockSeen = { wallMs, steadyMs };
      return;
    }
    try {
      const moved = await store.moveQueued(stepMs);
      clockSeen = { wallMs, steadyMs };
      log("warn", "the clock was set back; queued events moved with it", {
        seconds: Math.round(-stepMs / 1000),
        events: moved,
      });
    } catch (error) {
      // Tried again on the next pass: the step is still there to see.
      log("warn", "the clock was set back; cannot move the queued events yet", {
        error: describe(error),
      });
    }
  };
}
