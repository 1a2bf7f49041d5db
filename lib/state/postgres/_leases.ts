/**
 * The leases of the events one store claimed: each claim's random token, named by every outcome
 * write of its run, and the heartbeat that moves the leases' end on while the runs go on. When a
 * gateway dies its heartbeat stops, its leases end, and any other gateway claims the events
 * again (docs/scaling.md).
 *
 * @module
 */

/** The leases a store holds. */
export interface Leases {
  /** How long a lease lasts from a claim or a heartbeat, in ms. */
  readonly leaseMs: number;
  /** A new random token for a claim. */
  newToken(): string;
  /** The token of this store's claim on the event, if it holds one. */
  token(eventId: string): string | undefined;
  /** Notes a claim: its heartbeat starts (or goes on). */
  hold(eventId: string, token: string): void;
  /** Forgets a claim once its outcome is written (or its lease was lost). */
  release(eventId: string): void;
  /** The tokens held now. */
  tokens(): string[];
  /** Stops the heartbeat. */
  stop(): void;
}

/**
 * Makes a store's leases, with a heartbeat that runs every third of a lease while any is held.
 * @param leaseMs how long a lease lasts, in ms
 * @param beat moves on the leases of these tokens; a failure is left to the lease's end (the
 *   runs' outcome writes are then refused if another gateway claimed their events)
 * @returns the leases
 */
export function createLeases(
  leaseMs: number,
  beat: (tokens: string[]) => Promise<void>,
): Leases {
  const held = new Map<string, string>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const schedule = () => {
    if (timer !== undefined || held.size === 0) return;
    const beating = setTimeout(async () => {
      timer = undefined;
      if (held.size === 0) return;
      await beat([...held.values()]).catch(() => {/* the lease's end handles it */});
      schedule();
    }, Math.max(1, Math.floor(leaseMs / 3)));
    timer = beating;
    // A heartbeat alone does not keep the process alive.
    Deno.unrefTimer(beating);
  };
  return {
    leaseMs,
    newToken: () => crypto.randomUUID(),
    token: (eventId) => held.get(eventId),
    hold(eventId, token) {
      held.set(eventId, token);
      schedule();
    },
    release(eventId) {
      held.delete(eventId);
      if (held.size === 0 && timer !== undefined) {
        clearTimeout(timer);
        timer = undefined;
      }
    },
    tokens: () => [...held.values()],
    stop() {
      held.clear();
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  };
}
