/**
 * How many refused requests the log records. Each refusal (401, 404, 405, 413, ... before an
 * event is accepted) is one log line, and anyone on the internet can send them: without a
 * limit, a flood of requests to unknown names would rotate away the whole log, with every line
 * about accepted events in it.
 *
 * So in each window of `windowMs` the log records at most `linesPerWindow` refusals per pool:
 * one pool per subscription, for the refusals of requests to it (a sender with a wrong secret,
 * a body too large), and one for the rest (unknown names and paths, methods, Host headers). A
 * flood of requests to unknown names cannot hide a real sender's 401. Past the limit the log
 * says once that it stops recording that pool's refusals; when the window ends, one line counts
 * those left out, by pool and status. Answers are unchanged: every refused request still gets
 * its refusal. A 503 for too many bodies at once is a refusal like the others: a flood of them
 * must not rotate the log away either. Accepted, duplicate and ignored events are always
 * logged, as are the gateway's own failures (a database that refuses an event), which do not
 * come here.
 *
 * @module
 */

/** Refusals logged per pool and window, and the window, in ms. */
export interface RefusalLogLimits {
  /** @default {100} */
  linesPerWindow: number;
  /** @default {10000} */
  windowMs: number;
}

const DEFAULT_LIMITS: RefusalLogLimits = { linesPerWindow: 100, windowMs: 10_000 };

/** The pool of refusals that are not about one subscription. */
const OTHERS = "";

/** The refusals a gateway logs, and the count of those it leaves out. */
export interface RefusalLog {
  /**
   * Logs a refusal through `write`, unless its pool has had its share of this window.
   * @param subscription the subscription the request was for, or undefined when it names none
   *   (an unknown name or path, a method or Host header refused before the name is looked up)
   * @param status the refusal's HTTP status, for the count of those left out
   * @param write writes the refusal's line
   */
  refused(subscription: string | undefined, status: number, write: () => void): void;
  /** Writes the count of refusals left out in a window that has ended (a timer calls it). */
  endWindowIfOver(): void;
  /** Writes the count of refusals left out so far (at shutdown). */
  flush(): void;
}

/**
 * Creates the refusal log of one gateway.
 * @param warn writes a line of its own: that a pool stops being logged, or the count left out
 * @param options `limits`: lines per pool and window, and the window in ms (@default {100 per
 *   10 s}); `now`: a monotonic clock in ms (@default {performance.now})
 * @returns the refusal log
 */
export function createRefusalLog(
  warn: (line: string) => void,
  { limits = DEFAULT_LIMITS, now = () => performance.now() }: {
    limits?: RefusalLogLimits;
    now?: () => number;
  } = {},
): RefusalLog {
  let windowStart = now();
  /** Lines written this window, by pool. */
  const logged = new Map<string, number>();
  /** Refusals left out this window, by pool, then status. */
  const left = new Map<string, Map<number, number>>();

  function flush(): void {
    if (left.size > 0) warn(leftOutLine(left));
    left.clear();
    logged.clear();
  }

  function endWindowIfOver(): void {
    const at = now();
    if (at - windowStart < limits.windowMs) return;
    flush();
    windowStart = at;
  }

  return {
    refused(subscription, status, write) {
      endWindowIfOver();
      const pool = subscription ?? OTHERS;
      const count = logged.get(pool) ?? 0;
      if (count < limits.linesPerWindow) {
        logged.set(pool, count + 1);
        return write();
      }
      let byStatus = left.get(pool);
      if (byStatus === undefined) {
        left.set(pool, byStatus = new Map());
        warn(stopLine(pool, limits));
      }
      byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
    },
    endWindowIfOver,
    flush,
  };
}

/** The line that says a pool's refusals are counted, not logged, for the rest of the window. */
function stopLine(pool: string, limits: RefusalLogLimits): string {
  const what = pool === OTHERS ? "to unknown names and paths" : `to ${pool}`;
  return `over ${limits.linesPerWindow} refused requests ${what} in ${limits.windowMs / 1000} s:` +
    " the rest are counted, not logged, until the count is written";
}

/**
 * The line that counts the refusals left out, by pool, then status:
 * `3 refused requests were not logged (gh: 401 ×2; unknown names and paths: 404 ×1)`.
 */
function leftOutLine(left: Map<string, Map<number, number>>): string {
  let total = 0;
  const pools = [...left].map(([pool, byStatus]) => {
    const counts = [...byStatus].sort(([a], [b]) => a - b).map(([status, count]) => {
      total += count;
      return `${status} ×${count}`;
    });
    return `${pool === OTHERS ? "unknown names and paths" : pool}: ${counts.join(", ")}`;
  });
  const requests = total === 1 ? "refused request was" : "refused requests were";
  return `${total} ${requests} not logged (${pools.join("; ")})`;
}
