/**
 * Counts per minute over the last day, in memory: the refused requests the dashboard's overview
 * charts (docs/dashboard.md), which the state store never sees.
 *
 * @module
 */

/** A minute in ms. */
const MINUTE_MS = 60_000;

/** Minutes kept: a day's worth. */
export const MINUTES_KEPT = 24 * 60;

/** One minute's count. */
export interface MinuteCount {
  /** The minute's start, in ms since the epoch (a multiple of 60 000). */
  minuteMs: number;
  count: number;
}

/**
 * A ring of {@link MINUTES_KEPT} counters, one a minute: a count older than a day is
 * overwritten by the minute that takes its slot, so the memory stays the same however long the
 * gateway runs.
 */
export class MinuteRing {
  readonly #minutes = new Float64Array(MINUTES_KEPT).fill(-1);
  readonly #counts = new Float64Array(MINUTES_KEPT);

  /**
   * Counts one at `nowMs`.
   * @param nowMs now, in ms since the epoch
   */
  add(nowMs: number): void {
    const minute = Math.floor(nowMs / MINUTE_MS);
    const slot = ((minute % MINUTES_KEPT) + MINUTES_KEPT) % MINUTES_KEPT;
    if (this.#minutes[slot] !== minute) {
      this.#minutes[slot] = minute;
      this.#counts[slot] = 0;
    }
    this.#counts[slot]++;
  }

  /**
   * The minutes from `sinceMs` that counted any, oldest first.
   * @param sinceMs the first minute wanted, in ms since the epoch (rounded down to a minute);
   *   at most a day ago counts
   */
  since(sinceMs: number): MinuteCount[] {
    const from = Math.floor(sinceMs / MINUTE_MS);
    const found: MinuteCount[] = [];
    for (let slot = 0; slot < MINUTES_KEPT; slot++) {
      const minute = this.#minutes[slot];
      if (minute >= from && this.#counts[slot] > 0) {
        found.push({ minuteMs: minute * MINUTE_MS, count: this.#counts[slot] });
      }
    }
    return found.sort((a, b) => a.minuteMs - b.minuteMs);
  }
}
