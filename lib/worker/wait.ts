/**
 * Waiting with a time limit that a signal can cut short (a second Ctrl-C during a stop).
 *
 * @module
 */
import { realTimer, type SetTimer } from "./timer.ts";

/**
 * Waits for `promise`, at most `timeoutMs`, and no longer than until `signal` aborts. The
 * timer and the abort listener are removed when it returns.
 * @param promise what to wait for; its outcome is ignored (a rejection counts as settled)
 * @param timeoutMs the longest wait, in milliseconds
 * @param options `signal`: ends the wait when it aborts (at once when already aborted);
 *   `setTimer`: schedules a callback and returns its cancel function (tests pass a fake clock)
 * @returns once the first of the three happens: true when `promise` settled, false when the
 *   wait was cut short
 */
export async function settledWithin(
  promise: Promise<unknown>,
  timeoutMs: number,
  options: {
    signal?: AbortSignal;
    setTimer?: SetTimer;
  } = {},
): Promise<boolean> {
  if (options.signal?.aborted) return false;
  const setTimer = options.setTimer ?? realTimer;
  let cancelTimer: (() => void) | undefined;
  let onAbort: (() => void) | undefined;
  const cutShort = new Promise<false>((resolve) => {
    cancelTimer = setTimer(() => resolve(false), timeoutMs);
    onAbort = () => resolve(false);
    options.signal?.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([promise.then(() => true, () => true), cutShort]);
  } finally {
    cancelTimer?.();
    if (onAbort) options.signal?.removeEventListener("abort", onAbort);
  }
}
