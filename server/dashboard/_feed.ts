/**
 * The live feed of the dashboard: while a page listens, the state store is read about once a
 * second for what that page shows, and what changed goes to its listeners.
 *
 * What a page shows is its view: the events page's filter, of which it shows the first page
 * (the newest {@link PAGE_SIZE} events that match), or one event, by id. The feed reads each
 * view once a tick for all its listeners, with the query the page itself was read with, and
 * nothing of a view nobody follows, so the ingest path pays nothing for a dashboard nobody
 * watches. A read never takes more than a page of rows, however busy the gateway: new events
 * beyond a page in one tick push each other off it, as a reload would show. A view whose read
 * is slow (a filter no index serves, over a large database) is read less often, so that each
 * view holds the event loop at most about 1% of the time.
 *
 * Reading the store, rather than being told by this process's ingest and worker, shows as well
 * what any other process writing the same database did.
 *
 * @module
 */
import type { StateStore, StoredEvent } from "../../lib/state/mod.ts";
import { PAGE_SIZE } from "./_events_page.tsx";
import type { PageFilter } from "./_filters.ts";

/** How often the feed reads the store while a page listens, in ms. */
export const FEED_INTERVAL_MS = 1000;

/** The most of the event loop's time one view's reads may take (a share). */
const READ_SHARE = 0.01;

/** What a page shows: the first page of the events page's filter, or one event by its id. */
export type FeedView = { filter: PageFilter } | { eventId: string };

/**
 * Called after each tick with the events of the listener's view that changed since the tick
 * before (maybe none), oldest first.
 */
export type FeedListener = (changed: StoredEvent[]) => void;

/** Options of {@link EventFeed}. */
export interface FeedOptions {
  /**
   * Runs `tick` every `ms` until the returned function is called; `tick` resolves once its
   * reads are told (a tick while the one before still reads does nothing).
   * @default {setInterval}
   */
  every?: (ms: number, tick: () => Promise<void>) => () => void;
  /** A monotonic clock in ms, to time the reads. @default {performance.now} */
  clockMs?: () => number;
  /** Told when a read fails (the store closed, a lock held too long); the feed goes on. */
  onError?: (error: unknown) => void;
}

/** A view followed by at least one listener, and what it showed at its last read. */
interface Followed {
  view: FeedView;
  listeners: Set<FeedListener>;
  /** Each event read last time, by id: `status|attempts|updatedAtMs`. */
  versions: Map<string, string>;
  /** Whether a read has learned what the view shows: until then nothing is a change. */
  primed: boolean;
  /** The first read, while it runs: a tick waits for it rather than read the view beside it. */
  priming?: Promise<unknown>;
  /** Ticks left before the next read, after a slow one. */
  restTicks: number;
}

/** See the module's documentation. */
export class EventFeed {
  #store: Pick<StateStore, "listEvents" | "getEvent">;
  #every: NonNullable<FeedOptions["every"]>;
  #clockMs: () => number;
  #onError: (error: unknown) => void;
  #views = new Map<string, Followed>();
  #stopTimer: (() => void) | undefined;
  #ticking = false;

  /**
   * @param store the state store the gateway writes
   * @param options the timer, the clock and the error report (see {@link FeedOptions})
   */
  constructor(store: Pick<StateStore, "listEvents" | "getEvent">, options: FeedOptions = {}) {
    this.#store = store;
    this.#every = options.every ?? ((ms, tick) => {
      const timer = setInterval(tick, ms);
      return () => clearInterval(timer);
    });
    this.#clockMs = options.clockMs ?? (() => performance.now());
    this.#onError = options.onError ?? (() => {});
  }

  /**
   * Adds a listener to a view. The first one of a view starts it from `shown`, or else reads
   * it at once, to learn what it shows: a change made after that is then a change, not part of
   * what was there.
   * @param view what the listener's page shows (see {@link FeedView})
   * @param listener called after every tick
   * @param shown what the caller has just read of the view, with the view's own query (the
   *   first page of its filter, or its one event): no change made after that read is missed,
   *   even when the store's reads wait on a database server
   * @returns a function that removes it; the last one removed stops the reads
   */
  listen(view: FeedView, listener: FeedListener, shown?: StoredEvent[]): () => void {
    const key = JSON.stringify("eventId" in view ? { id: view.eventId } : view.filter);
    let followed = this.#views.get(key);
    if (followed === undefined) {
      followed = { view, listeners: new Set(), versions: new Map(), primed: false, restTicks: 0 };
      this.#views.set(key, followed);
      if (shown) {
        for (const event of shown) followed.versions.set(event.id, versionOf(event));
        followed.primed = true;
      } else {
        // A first read runs cold: no measure of the ones to come.
        const priming = followed;
        priming.priming = this.#readSafely(priming, { timed: false })
          .finally(() => priming.priming = undefined);
      }
    }
    const own = followed;
    own.listeners.add(listener);
    this.#stopTimer ??= this.#every(FEED_INTERVAL_MS, () => this.#tick());
    return () => {
      own.listeners.delete(listener);
      if (own.listeners.size === 0 && this.#views.get(key) === own) this.#views.delete(key);
      if (this.#views.size === 0) this.#stop();
    };
  }

  /** How many listeners there are (pages following the feed). */
  get listeners(): number {
    let count = 0;
    for (const followed of this.#views.values()) count += followed.listeners.size;
    return count;
  }

  /** Stops the reads and lets every listener go (the gateway stops). */
  close(): void {
    this.#views.clear();
    this.#stop();
  }

  /** One tick: each view read (unless resting after a slow read), its changes to its listeners. */
  async #tick(): Promise<void> {
    if (this.#ticking) return;
    this.#ticking = true;
    try {
      for (const followed of [...this.#views.values()]) {
        let changed: StoredEvent[] = [];
        await followed.priming;
        if (followed.restTicks > 0) followed.restTicks -= 1;
        else changed = await this.#readSafely(followed);
        for (const listener of [...followed.listeners]) listener(changed);
      }
    } finally {
      this.#ticking = false;
    }
  }

  /** {@link EventFeed.#read}, timed, with a failure told and taken as no change. */
  async #readSafely(followed: Followed, { timed = true } = {}): Promise<StoredEvent[]> {
    const startMs = this.#clockMs();
    try {
      return await this.#read(followed);
    } catch (error) {
      this.#onError(error);
      return [];
    } finally {
      const tookMs = timed ? this.#clockMs() - startMs : 0;
      followed.restTicks = Math.max(0, Math.ceil(tookMs / READ_SHARE / FEED_INTERVAL_MS) - 1);
    }
  }

  /**
   * Reads what a view shows now.
   * @returns the events new or changed since its last read, oldest first; none at the first
   * @throws StoreUnavailableError when the store cannot be read
   */
  async #read(followed: Followed): Promise<StoredEvent[]> {
    const { view, versions } = followed;
    const shown = "eventId" in view
      ? [await this.#store.getEvent(view.eventId)].filter((event) => event !== null)
      : await this.#store.listEvents({ ...view.filter, limit: PAGE_SIZE });
    const current = new Map<string, string>();
    const changed: StoredEvent[] = [];
    const compare = (event: StoredEvent) => {
      const version = versionOf(event);
      if (followed.primed && versions.get(event.id) !== version) changed.push(event);
      return version;
    };
    for (const event of shown) current.set(event.id, compare(event));
    if ("filter" in view && view.filter.status !== undefined && followed.primed) {
      // A row whose status no longer matches stays on the page, in its new status: it is read
      // once more by id, then no longer followed.
      for (const id of versions.keys()) {
        if (current.has(id)) continue;
        const event = await this.#store.getEvent(id);
        if (event !== null) compare(event);
      }
    }
    followed.versions = current;
    followed.primed = true;
    return changed.sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  }

  #stop(): void {
    this.#stopTimer?.();
    this.#stopTimer = undefined;
  }
}

/** What changes with an event as a page shows it. */
function versionOf(event: StoredEvent): string {
  return `${event.status}|${event.attempts}|${event.updatedAtMs}`;
}
