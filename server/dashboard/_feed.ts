/**
 * The live feed of the dashboard: while at least one page listens, the state store is read once
 * a second for new events and status changes, and the changes go to every listener. Reading
 * happens once for all listeners, and not at all while nobody listens, so the ingest path pays
 * nothing for a dashboard nobody watches and little for one that is watched.
 *
 * A poll reads the newest events, the running ones and the newest queued ones, each through
 * the order or the index it already has, and each event it saw queued or running before and
 * does not see now, by id: every change of status passes through queued or running (a replay
 * queues an event), so none is missed among the events a page shows live.
 *
 * @module
 */
import type { StateStore, StoredEvent } from "../../lib/state/mod.ts";

/** How often the feed reads the store while a page listens, in ms. */
export const FEED_INTERVAL_MS = 1000;

/** How many of the newest events, and of the newest queued ones, a poll reads. */
const WINDOW = 50;

/** Called after each poll with the events that changed since the one before (maybe none). */
export type FeedListener = (changed: StoredEvent[]) => void;

/** Options of {@link EventFeed}. */
export interface FeedOptions {
  /**
   * Runs `tick` every `ms` until the returned function is called.
   * @default {setInterval}
   */
  every?: (ms: number, tick: () => void) => () => void;
  /** Told when a poll fails (the store closed, a lock held too long); the feed goes on. */
  onError?: (error: unknown) => void;
}

/** What the feed remembers of an event: what changes with it, and whether it may change. */
type Seen = { version: string; settled: boolean };

/** See the module's documentation. */
export class EventFeed {
  #store: Pick<StateStore, "listEvents" | "getEvent">;
  #every: NonNullable<FeedOptions["every"]>;
  #onError: (error: unknown) => void;
  #listeners = new Set<FeedListener>();
  #seen = new Map<string, Seen>();
  #primed = false;
  #stopTimer: (() => void) | undefined;

  /**
   * @param store the state store the gateway writes
   * @param options the timer and the error report (see {@link FeedOptions})
   */
  constructor(store: Pick<StateStore, "listEvents" | "getEvent">, options: FeedOptions = {}) {
    this.#store = store;
    this.#every = options.every ?? ((ms, tick) => {
      const timer = setInterval(tick, ms);
      return () => clearInterval(timer);
    });
    this.#onError = options.onError ?? (() => {});
  }

  /**
   * Adds a listener; the first one starts the polls, with one made now that learns what is
   * there: a change made before the first tick is then a change, not part of what was there.
   * @returns a function that removes it; the last one removed stops the polls
   */
  listen(listener: FeedListener): () => void {
    this.#listeners.add(listener);
    if (this.#stopTimer === undefined) {
      this.#stopTimer = this.#every(FEED_INTERVAL_MS, () => this.#tick());
      this.#tick();
    }
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.#stop();
    };
  }

  /** How many listeners there are (pages following the feed). */
  get listeners(): number {
    return this.#listeners.size;
  }

  /**
   * Reads the store once. The first poll after the feed starts only learns what is there.
   * @returns the events that are new or changed since the poll before, oldest first
   * @throws StoreUnavailableError when the store cannot be read
   */
  poll(): StoredEvent[] {
    const current = new Map<string, StoredEvent>();
    for (const filter of [{}, { status: "running" as const }, { status: "queued" as const }]) {
      for (const event of this.#store.listEvents({ ...filter, limit: WINDOW })) {
        current.set(event.id, event);
      }
    }
    for (const [id, seen] of this.#seen) {
      if (current.has(id) || seen.settled) continue;
      const event = this.#store.getEvent(id);
      if (event) current.set(id, event);
      else this.#seen.delete(id);
    }
    const changed: StoredEvent[] = [];
    for (const event of current.values()) {
      const version = `${event.status}|${event.attempts}|${event.updatedAtMs}`;
      if (this.#seen.get(event.id)?.version === version) continue;
      if (this.#primed) changed.push(event);
      const settled = event.status === "delivered" || event.status === "failed";
      this.#seen.set(event.id, { version, settled });
    }
    // Settled events out of the window are forgotten: they change only by a replay, which
    // queues them, where the next poll finds them.
    for (const [id, seen] of this.#seen) {
      if (seen.settled && !current.has(id)) this.#seen.delete(id);
    }
    this.#primed = true;
    return changed.sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  }

  /** Stops the polls and lets every listener go (the gateway stops). */
  close(): void {
    this.#listeners.clear();
    this.#stop();
  }

  /** One poll, its changes given to every listener. */
  #tick(): void {
    let changed: StoredEvent[];
    try {
      changed = this.poll();
    } catch (error) {
      this.#onError(error);
      changed = [];
    }
    for (const listener of [...this.#listeners]) listener(changed);
  }

  #stop(): void {
    this.#stopTimer?.();
    this.#stopTimer = undefined;
    this.#seen.clear();
    this.#primed = false;
  }
}
