/**
 * The state store's reads for the CLI, the dashboard and the metrics: listing events, finding
 * one, its attempts and its whole story, the queue and the activity per minute. Part of
 * {@link StateStore}; none of them is on the request path.
 *
 * @module
 */
import type { Attempt, EventStatus, Lineage, StoredEvent } from "./_records.ts";

/**
 * Which events {@link EventReads.listEvents} lists: those that match every field given. Only
 * `subscription` and `status` have indexes; the other fields are checked on the events read
 * newest first until the page is full, as indexes would be paid for on the ingest path.
 */
export interface EventFilter {
  /** The subscription's name. */
  subscription?: string;
  status?: EventStatus;
  /**
   * An event type or label: matches a label equal to it or starting with it and a dot, so
   * `issues` matches `issues` and `issues.opened`, and `issues.opened` only that.
   */
  eventType?: string;
  /** The delivery id, exactly. */
  deliveryId?: string;
  /**
   * A cursor: only events accepted before the event with this id (the last one of the page
   * before). An id no event has any more (pruned meanwhile) counts by id order, which is
   * acceptance order.
   */
  beforeId?: string;
  /** The most events to list. @default {20} */
  limit?: number;
}

/** One minute of {@link EventReads.activity}. */
export interface ActivityMinute {
  /** The minute's start, in ms since the epoch (a multiple of 60 000). */
  minuteMs: number;
  /** Events accepted in it. */
  accepted: number;
  /** Events delivered in it (their last change). */
  delivered: number;
  /** Events that failed for good in it (their last change). */
  failed: number;
}

/** One subscription's counts in {@link EventReads.subscriptionCounts}. */
export interface SubscriptionCounts {
  /** The subscription's name, as its events have it. */
  subscription: string;
  /** Events accepted since the time asked for. */
  accepted: number;
  /** Events delivered since then (their last change). */
  delivered: number;
  /** Events that failed for good since then (their last change). */
  failed: number;
}

/** The queue as {@link EventReads.queueStats} sees it, for the gateway's metrics. */
export interface QueueStats {
  /** Events `queued`: waiting for their first attempt, a retry, or a replay's run. */
  queued: number;
  /**
   * When the longest-waiting of them was queued (accepted, or replayed), in ms since the
   * epoch; null when none is queued.
   */
  oldestQueuedAtMs: number | null;
}

/** What {@link StateStore} reads: every backend implements them with the rest. */
export interface EventReads {
  /**
   * How many events are queued, and since when the oldest waits: read when the metrics are
   * scraped (docs/metrics.md), never on the request path.
   * @returns the count and the oldest's queued time (see {@link QueueStats})
   * @throws StoreUnavailableError when the database cannot be read
   */
  queueStats(): Promise<QueueStats>;
  /**
   * Events per minute since `sinceMs`, for the dashboard's overview (docs/dashboard.md): how
   * many were accepted in each minute, and how many of them ended delivered or failed in each
   * minute (by their last change). Read when the page is opened, never on the request path.
   * @param sinceMs the first minute counted, in ms since the epoch (rounded down to a minute)
   * @returns the minutes that had any, oldest first (see {@link ActivityMinute})
   * @throws StoreUnavailableError when the database cannot be read
   */
  activity(sinceMs: number): Promise<ActivityMinute[]>;
  /**
   * Events per subscription since `sinceMs`, for the dashboard's subscriptions page
   * (docs/dashboard.md): counted as {@link activity} counts them, by subscription rather than
   * by minute. Read when the page is opened, never on the request path.
   * @param sinceMs the start of the count, in ms since the epoch
   * @returns the subscriptions that had any, by name (see {@link SubscriptionCounts})
   * @throws StoreUnavailableError when the database cannot be read
   */
  subscriptionCounts(sinceMs: number): Promise<SubscriptionCounts[]>;
  /**
   * Lists events, newest accepted first, a page at a time: the next page is the events before
   * the last one of this page (`beforeId`).
   * @param filter which events (see {@link EventFilter}); `limit` @default {20}
   * @returns the events
   * @throws StoreUnavailableError when the database cannot be read
   */
  listEvents(filter: EventFilter): Promise<StoredEvent[]>;
  /**
   * Finds an event by id or by a prefix of its id.
   * @returns the event, or null when nothing matches (the empty prefix matches nothing)
   * @throws NotFoundError when the prefix matches several events (the message lists some)
   * @throws StoreUnavailableError when the database cannot be read
   */
  getEvent(eventId: string): Promise<StoredEvent | null>;
  /**
   * Attempts of an event, oldest first (every series, replays included).
   * @param eventId id or unique prefix
   * @returns the attempts; none for an unknown event
   * @throws NotFoundError when the prefix matches several events
   * @throws StoreUnavailableError when the database cannot be read
   */
  attempts(eventId: string): Promise<Attempt[]>;
  /**
   * The whole story of an event, read at one point in time: the event with the headers and
   * scheme of its request, its attempts with their agent runs and answers, the message parts
   * delivered with the platforms' message ids (docs/durability.md#what-is-kept), the events
   * folded into its run, and the earlier turns of its conversation (see {@link Lineage}).
   * @param eventId id or unique prefix
   * @returns the lineage, or null when nothing matches
   * @throws NotFoundError when the prefix matches several events
   * @throws StoreUnavailableError when the database cannot be read
   * @example
   * ```ts
   * const story = await store.lineage("evt_0mh2k3");
   * for (const part of story?.parts ?? []) console.log(part.target, part.chat, part.messageId);
   * ```
   */
  lineage(eventId: string): Promise<Lineage | null>;
}
