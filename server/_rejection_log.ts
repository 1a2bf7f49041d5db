/**
 * How many refused requests the log records. Each refusal (401, 404, 405, 413, ... before an
 * event is accepted) is one log line, and anyone on the internet can send them: about 190,000
 * requests to unknown names in 20 s rotated away the whole log (3 files of 5 MiB), with every
 * line about accepted events in it. So the log records at most `linesPerWindow` refusals in each
 * window of `windowMs`; past that it says once that it stops recording them, and when the next
 * refusal comes after the window, how many it left out, by status. Answers are unchanged: every
 * refused request still gets its 4xx. Accepted, duplicate and ignored events, and 503s, are
 * always logged.
 *
 * @module
 */

/** Refusals logged per window, and the window, in ms. */
export interface RejectionLogLimits {
  /** @default {200} */
  linesPerWindow: number;
  /** @default {10000} */
  windowMs: number;
}

const DEFAULT_LIMITS: RejectionLogLimits = { linesPerWindow: 200, windowMs: 10_000 };

/** What the budget says about one refusal. */
export interface RejectionVerdict {
  /** Log this refusal's line. */
  log: boolean;
  /** A line to write first: that refusals stop being logged, or how many were left out. */
  notice?: string;
}

/**
 * Counts refusals per window and says which to log.
 * @param limits lines per window and its length (@default {200 per 10 s})
 * @param now a monotonic clock in ms (@default {performance.now})
 * @returns `take(status)`: the verdict for one refusal with this HTTP status; and `flush()`:
 *   the count of refusals not logged in the last window, as a line, or undefined (at shutdown)
 */
export function createRejectionLogBudget(
  limits: RejectionLogLimits = DEFAULT_LIMITS,
  now: () => number = () => performance.now(),
): { take(status: number): RejectionVerdict; flush(): string | undefined } {
  let windowStart = -Infinity;
  let logged = 0;
  const left = new Map<number, number>();

  function summary(): string | undefined {
    if (left.size === 0) return undefined;
    const total = [...left.values()].reduce((sum, count) => sum + count, 0);
    const byStatus = [...left].sort(([a], [b]) => a - b).map(([s, n]) => `${s}: ${n}`).join(", ");
    left.clear();
    return `${total} more refused requests were not logged (${byStatus})`;
  }

  return {
    take(status) {
      const at = now();
      let notice: string | undefined;
      if (at - windowStart >= limits.windowMs) {
        notice = summary();
        windowStart = at;
        logged = 0;
      }
      if (logged < limits.linesPerWindow) {
        logged += 1;
        return { log: true, notice };
      }
      left.set(status, (left.get(status) ?? 0) + 1);
      if (left.size === 1 && left.get(status) === 1) {
        const seconds = limits.windowMs / 1000;
        return {
          log: false,
          notice: `over ${limits.linesPerWindow} refused requests in ${seconds} s: the rest ` +
            `of this ${seconds} s are counted, not logged`,
        };
      }
      return { log: false };
    },
    flush: summary,
  };
}
