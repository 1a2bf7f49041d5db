/**
 * A bound on how many transforms the webhook listener runs at once
 * (docs/subscriptions.md#transforms): each is a process the sender waits on, and a burst of
 * requests must not start one per request. A request past the bound is accepted with its
 * transform pending, for the worker, which runs one event at a time per slot of its own.
 *
 * @module
 */

/** Transforms the webhook listener runs at once, at most; more are left to the worker. */
export const MAX_INGEST_TRANSFORMS = 8;

/** Places for running transforms: take one before starting a program, give it back after. */
export interface TransformSlots {
  /** Takes a place. @returns false, taking none, when all are taken */
  take(): boolean;
  /** Gives back a place taken. */
  release(): void;
}

/**
 * Makes the places for `max` transforms at once.
 * @param max how many may run at once, ≥ 1 @default {MAX_INGEST_TRANSFORMS}
 * @returns the places, none taken
 * @example
 * ```ts
 * const slots = transformSlots(2);
 * if (slots.take()) {
 *   try { await runTransform(transform, payload); } finally { slots.release(); }
 * }
 * ```
 */
export function transformSlots(max = MAX_INGEST_TRANSFORMS): TransformSlots {
  let taken = 0;
  return {
    take() {
      if (taken >= max) return false;
      taken++;
      return true;
    },
    release() {
      taken = Math.max(0, taken - 1);
    },
  };
}
