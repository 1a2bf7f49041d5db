/**
 * The real timer behind every injected `setTimer`: the worker's, the held direct records' and
 * that of a wait with a time limit. Tests pass a fake clock of the same shape instead.
 *
 * @module
 */

/**
 * Schedules a callback; returns a function that cancels it. Tests pass a fake one.
 * @default {@link realTimer} (setTimeout/clearTimeout)
 */
export type SetTimer = (callback: () => void, delayMs: number) => () => void;

/**
 * Runs `callback` once after `delayMs`, with `setTimeout`.
 * @param callback what to run
 * @param delayMs how long to wait first, in milliseconds
 * @returns a function that cancels the callback (with `clearTimeout`); calling it after the
 *   callback ran does nothing
 */
export function realTimer(callback: () => void, delayMs: number): () => void {
  const id = setTimeout(callback, delayMs);
  return () => clearTimeout(id);
}
