import assert from "node:assert/strict";
import { settledWithin } from "../../../lib/worker/wait.ts";

/** A timer that fires only when the test calls `fire()`; records whether it was cancelled. */
function manualTimer() {
  const timer = { fire: () => {}, cancelled: false, delayMs: -1 };
  const setTimer = (callback: () => void, delayMs: number) => {
    timer.fire = callback;
    timer.delayMs = delayMs;
    return () => void (timer.cancelled = true);
  };
  return { timer, setTimer };
}

Deno.test("settledWithin() returns when the promise settles, a rejection included, and cancels its timer", async () => {
  const { timer, setTimer } = manualTimer();
  assert.equal(await settledWithin(Promise.reject(new Error("failed")), 5_000, { setTimer }), true);
  assert.equal(timer.delayMs, 5_000);
  assert.equal(timer.cancelled, true);
});

/** Asserts that `waiting` is still pending a turn later, and settles once `end()` is called. */
async function endsOnlyWhen(waiting: Promise<boolean>, end: () => void): Promise<void> {
  let done = false;
  const watched = waiting.then((settled) => {
    done = true;
    return settled;
  });
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(done, false);
  end();
  assert.equal(await watched, false, "cut short, not settled");
  assert.equal(done, true);
}

Deno.test("settledWithin() returns at the time limit while the promise is pending", async () => {
  const { timer, setTimer } = manualTimer();
  await endsOnlyWhen(
    settledWithin(new Promise(() => {}), 1_000, { setTimer }),
    () => timer.fire(),
  );
});

Deno.test("settledWithin() returns when the signal aborts, or at once when it already has", async () => {
  const { setTimer } = manualTimer();
  const hurry = new AbortController();
  await endsOnlyWhen(
    settledWithin(new Promise(() => {}), 60_000, { signal: hurry.signal, setTimer }),
    () => hurry.abort(),
  );
  await settledWithin(new Promise(() => {}), 60_000, { signal: hurry.signal, setTimer });
});
