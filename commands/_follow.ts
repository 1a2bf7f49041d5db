/**
 * `agent webhook events --follow`: the latest events, then one line for each new event and each
 * change of an event's status, as the running gateway stores them, until stopped. It reads the
 * state database every {@link FOLLOW_POLL_MS}; a reader never holds up the gateway's writes
 * (WAL mode).
 *
 * @module
 */
import { oneTerminalLine } from "../lib/log.ts";
import type { EventStatus, StateStore, StoredEvent } from "../lib/state/mod.ts";
import { cut, duration, utcTime } from "./_event_listing.ts";

/** How often the state database is read, in ms. */
export const FOLLOW_POLL_MS = 500;

/** Events read on each pass: new ones past this many between two passes show from the newest. */
const WINDOW = 100;

/** Longest error a line shows, in characters. */
const ERROR_CHARS = 120;

/** What {@link followEvents} needs. */
export interface FollowOptions {
  /** Only this subscription's events. */
  subscription?: string;
  /** Only lines of this status (every change is still watched). */
  status?: EventStatus;
  /** The events printed first, the newest ones. */
  limit: number;
  /** Prints one line. */
  print: (line: string) => void;
  /** Waits `ms`, or less when `signal` aborts. */
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Ends the following (Ctrl-C). */
  signal: AbortSignal;
}

/**
 * Prints the latest events, oldest first, then follows: a line for each event accepted since,
 * and for each status change of one shown (running, a retry scheduled, delivered, failed).
 * @param store the state store, opened by the command
 * @param options what to follow and how to print and wait (see {@link FollowOptions})
 * @returns when `signal` aborts
 * @throws StoreUnavailableError when the database cannot be read
 */
export async function followEvents(
  store: Pick<StateStore, "listEvents" | "getEvent">,
  options: FollowOptions,
): Promise<void> {
  const { subscription, status, signal } = options;
  /** What was last printed of each event not finished yet: its status and attempts. */
  const watched = new Map<string, string>();
  const show = (event: StoredEvent, print = true) => {
    const seen = stateOf(event);
    if (watched.get(event.id) === seen) return;
    if (print && (status === undefined || event.status === status)) {
      options.print(followLine(event));
    }
    if (event.status === "delivered" || event.status === "failed") watched.delete(event.id);
    else watched.set(event.id, seen);
  };
  let recent = await store.listEvents({ subscription, limit: WINDOW });
  // Those not printed are watched all the same: a queued event may fail while followed.
  for (const event of recent.toReversed()) show(event, false);
  const latest = await store.listEvents({ subscription, status, limit: options.limit });
  for (const event of latest.reverse()) options.print(followLine(event));
  let newestId = recent[0]?.id ?? "";
  while (!signal.aborted) {
    await options.sleep(FOLLOW_POLL_MS, signal);
    if (signal.aborted) return;
    recent = await store.listEvents({ subscription, limit: WINDOW });
    const byId = new Map(recent.map((event) => [event.id, event]));
    for (const [id] of watched) {
      const event = byId.get(id) ?? await store.getEvent(id);
      if (event === null) watched.delete(id); // pruned meanwhile
      else if (event.id <= newestId) show(event);
    }
    for (const event of recent.filter((event) => event.id > newestId).reverse()) show(event);
    if (recent.length > 0 && recent[0].id > newestId) newestId = recent[0].id;
  }
}

/** What a line says changed: the status, and the attempt it is at. */
function stateOf(event: StoredEvent): string {
  return `${event.status}/${event.attempts}`;
}

/**
 * One line: when it changed (UTC), id, subscription, event label, then what happened.
 * `2026-03-01 10:00:02  evt_0mh2k3x9a1b2c3d4  gh  issues.opened  delivered after 1 try, 2.1 s`
 * @param event the event as it is now
 */
export function followLine(event: StoredEvent): string {
  const head = `${utcTime(event.updatedAtMs)}  ${event.id}  ${event.subscription}  ${
    oneTerminalLine(event.eventLabel)
  }`;
  return `${head}  ${whatHappened(event)}`;
}

/** `queued`, `running (attempt 2)`, `queued: retry after <error>`, `delivered after ...`. */
function whatHappened(event: StoredEvent): string {
  const tries = `${event.attempts} ${event.attempts === 1 ? "try" : "tries"}`;
  const took = duration(event.updatedAtMs - (event.replayedAtMs ?? event.receivedAtMs));
  const error = cut(oneTerminalLine(event.lastError ?? "").replace(/\s+/g, " "), ERROR_CHARS);
  switch (event.status) {
    case "queued":
      return event.lastError === null ? "queued" : `queued for a retry: ${error}`;
    case "running":
      return `running (attempt ${event.attempts})`;
    case "delivered":
      return `delivered after ${tries}, ${took}`;
    case "failed":
      return `failed after ${tries}, ${took}: ${error}`;
  }
}
