// deno-lint-ignore-file require-await -- async by StateStore's contract, synchronous inside
/**
 * Reading events for the CLI (`webhook events`, `webhook show`): listing them, finding one by
 * id or prefix, its attempts and its whole lineage; and the queue's size, for the metrics.
 *
 * @module
 */
import { listEvents } from "./_maintenance.ts";
import { rowsToActivity, rowToAttempt, rowToEvent, rowToPart } from "../_rows.ts";
import { preparedOnFirstUse, type Row, type StoreCore } from "./_store_core.ts";
import type { ActivityMinute, Lineage, StoredEvent, SubscriptionCounts } from "../mod.ts";
import type { EventReads } from "../_reads.ts";

/**
 * The store's methods that read events.
 * @param core the store
 * @returns the methods, as {@link StateStore} documents them
 */
export function readingOps(core: StoreCore): EventReads {
  const { db, s, use } = core;
  return {
    listEvents: async (filter) => use(() => listEvents(db, filter)),
    getEvent: async (eventId) => use(() => core.findEvent(eventId)),
    attempts: async (eventId) =>
      use(() => {
        const id = core.findEvent(eventId)?.id ?? eventId;
        return (s.attempts.all(id) as Row[]).map(rowToAttempt);
      }),
    lineage: async (eventId) => use(() => lineage(core, eventId)),
    queueStats: async () =>
      use(() => {
        const row = s.queueStats.get() as Row;
        return {
          queued: Number(row.queued),
          oldestQueuedAtMs: row.oldest === null ? null : Number(row.oldest),
        };
      }),
    activity: async (sinceMs) => use(() => activity(core, sinceMs)),
    subscriptionCounts: async (sinceMs) => use(() => subscriptionCounts(core, sinceMs)),
  };
}

/**
 * See {@link StateStore.lineage}: the event, its attempts and its parts, in one read transaction
 * so that a gateway committing meanwhile (another connection) is seen by all three or none.
 */
function lineage(core: StoreCore, eventId: string): Lineage | null {
  const { db, s } = core;
  const own = !db.isTransaction;
  if (own) db.exec("BEGIN");
  try {
    const event = core.findEvent(eventId);
    if (event === null) return null;
    const routing = lineageStatements(db);
    return {
      event,
      attempts: (s.attempts.all(event.id) as Row[]).map(rowToAttempt),
      parts: (s.parts.all(event.id) as Row[]).map(rowToPart),
      folded: (routing.folded.all(event.id) as Row[]).map((row) => rowToEvent(row)),
      ...(event.sessionKey === undefined
        ? {}
        : { conversation: conversation(routing, event, event.sessionKey) }),
    };
  } finally {
    if (own && db.isTransaction) db.exec("COMMIT");
  }
}

const LINEAGE_SQL = {
  folded: "SELECT * FROM events WHERE coalesced_into = ? ORDER BY rowid",
  // Through session_turns_key; rowids are in the order the turns were written.
  ownTurn: "SELECT max(rowid) AS own FROM session_turns " +
    "WHERE subscription = ? AND session_key = ? AND event_id = ?",
  earlierTurns: "SELECT event_id, prompt, answer, created_at FROM session_turns " +
    "WHERE subscription = ? AND session_key = ? AND rowid < ? ORDER BY rowid DESC LIMIT 200",
} as const;

/** Prepared on a connection's first lineage: the gateway itself never reads one. */
const lineageStatements = preparedOnFirstUse(LINEAGE_SQL);

/** See {@link Lineage.conversation}: the turns before the event's latest own one. */
function conversation(
  routing: ReturnType<typeof lineageStatements>,
  event: StoredEvent,
  sessionKey: string,
): NonNullable<Lineage["conversation"]> {
  const { subscription } = event;
  const row = routing.ownTurn.get(subscription, sessionKey, event.id) as Row | undefined;
  const own = row?.own === null || row?.own === undefined ? null : Number(row.own);
  const rows = routing.earlierTurns.all(
    subscription,
    sessionKey,
    own ?? Number.MAX_SAFE_INTEGER,
  ) as Row[];
  const earlierTurns = rows.reverse().map((turn) => ({
    eventId: String(turn.event_id),
    prompt: String(turn.prompt),
    answer: String(turn.answer),
    atMs: Number(turn.created_at),
  }));
  return { earlierTurns, ownTurn: own !== null };
}

/** Accepted, delivered and failed events per minute since `sinceMs`, oldest minute first. */
function activity(core: StoreCore, sinceMs: number): ActivityMinute[] {
  const from = Math.floor(sinceMs / 60_000) * 60_000;
  return rowsToActivity(
    core.s.acceptedPerMinute.all(from) as Row[],
    core.s.endedPerMinute.all(from) as Row[],
  );
}

/** Accepted, delivered and failed events per subscription since `sinceMs`, by name. */
function subscriptionCounts(core: StoreCore, sinceMs: number): SubscriptionCounts[] {
  const counts = new Map<string, SubscriptionCounts>();
  const of = (subscription: string) => {
    let entry = counts.get(subscription);
    if (!entry) {
      entry = { subscription, accepted: 0, delivered: 0, failed: 0 };
      counts.set(subscription, entry);
    }
    return entry;
  };
  for (const row of core.s.acceptedBySubscription.all(sinceMs) as Row[]) {
    of(String(row.subscription)).accepted = Number(row.n);
  }
  for (const row of core.s.endedBySubscription.all(sinceMs) as Row[]) {
    of(String(row.subscription))[row.status === "delivered" ? "delivered" : "failed"] = Number(
      row.n,
    );
  }
  return [...counts.values()].sort((a, b) => a.subscription < b.subscription ? -1 : 1);
}
