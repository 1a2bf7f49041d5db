/**
 * Reading events for the CLI, the dashboard and the metrics: listing them, finding one by id or
 * prefix, its attempts and its whole lineage, the queue, and the activity per minute and per
 * subscription.
 *
 * @module
 */
import type { ActivityMinute, EventFilter, StoredEvent, SubscriptionCounts } from "../mod.ts";
import { type Db, findEvent, type PgCore, query } from "./_core.ts";
import { readLineage } from "./_lineage.ts";
import { rowsToActivity, rowToAttempt, rowToEvent } from "../_rows.ts";
import type { EventReads } from "../_reads.ts";

/**
 * The store's methods that read events.
 * @param core the store
 * @returns the methods, as `StateStore` documents them (`lib/state/mod.ts`), asynchronous
 */
export function readingOps(core: PgCore): EventReads {
  const { sql, use } = core;
  return {
    listEvents: (filter) => use(() => listEvents(sql, filter)),
    getEvent: (eventId) => use(() => findEvent(sql, eventId)),
    attempts: (eventId) =>
      use(async () => {
        const id = (await findEvent(sql, eventId))?.id ?? eventId;
        return (await attemptRows(sql, id)).map(rowToAttempt);
      }),
    // In one read-only snapshot, so that a gateway committing meanwhile is seen by all or none.
    lineage: (eventId) =>
      use(() =>
        sql.begin("ISOLATION LEVEL REPEATABLE READ READ ONLY", (tx) => readLineage(tx, eventId))
      ),
    queueStats: () =>
      use(async () => {
        const [row] = await query(
          sql,
          "SELECT count(*) AS queued, min(coalesce(replayed_at, received_at)) AS oldest " +
            "FROM events WHERE status = 'queued'",
        );
        return {
          queued: Number(row.queued),
          oldestQueuedAtMs: row.oldest === null ? null : Number(row.oldest),
        };
      }),
    activity: (sinceMs) => use(() => activity(sql, sinceMs)),
    subscriptionCounts: (sinceMs) => use(() => subscriptionCounts(sql, sinceMs)),
  };
}

function attemptRows(db: Db, eventId: string) {
  return query(db, "SELECT * FROM attempts WHERE event_id = $1 ORDER BY seq", [eventId]);
}

/** See `EventReads.listEvents`: newest accepted first, in insertion order (`seq`). */
async function listEvents(db: Db, filter: EventFilter): Promise<StoredEvent[]> {
  const where: string[] = [];
  const params: (string | number)[] = [];
  const param = (value: string | number) => {
    params.push(value);
    return `$${params.length}`;
  };
  if (filter.subscription !== undefined) where.push(`subscription = ${param(filter.subscription)}`);
  if (filter.status !== undefined) where.push(`status = ${param(filter.status)}`);
  if (filter.eventType !== undefined) {
    const type = param(filter.eventType);
    where.push(`(event_type = ${type} OR starts_with(event_type, ${type} || '.'))`);
  }
  if (filter.deliveryId !== undefined) where.push(`delivery_id = ${param(filter.deliveryId)}`);
  if (filter.beforeId !== undefined) {
    // The cursor's own row, or, once pruned, the first event after it in id order.
    where.push(
      "seq < coalesce((SELECT seq FROM events WHERE id >= " + param(filter.beforeId) +
        " ORDER BY id LIMIT 1), (SELECT max(seq) + 1 FROM events))",
    );
  }
  const clause = where.length ? `WHERE ${where.join(" AND ")}` : "";
  const limit = param(Math.max(0, Math.floor(filter.limit ?? 20)));
  const rows = await query(
    db,
    `SELECT * FROM events ${clause} ORDER BY seq DESC LIMIT ${limit}`,
    params,
  );
  return rows.map(rowToEvent);
}

/** Accepted, delivered and failed events per minute since `sinceMs`, oldest minute first. */
async function activity(db: Db, sinceMs: number): Promise<ActivityMinute[]> {
  const from = Math.floor(sinceMs / 60_000) * 60_000;
  const accepted = await query(
    db,
    "SELECT (received_at / 60000) * 60000 AS minute, count(*) AS n FROM events " +
      "WHERE received_at >= $1 GROUP BY 1",
    [from],
  );
  const ended = await query(
    db,
    "SELECT (updated_at / 60000) * 60000 AS minute, status, count(*) AS n FROM events " +
      "WHERE status IN ('delivered', 'failed') AND updated_at >= $1 GROUP BY 1, 2",
    [from],
  );
  return rowsToActivity(accepted, ended);
}

/** Accepted, delivered and failed events per subscription since `sinceMs`, by name. */
async function subscriptionCounts(db: Db, sinceMs: number): Promise<SubscriptionCounts[]> {
  const counts = new Map<string, SubscriptionCounts>();
  const of = (subscription: string) => {
    let entry = counts.get(subscription);
    if (!entry) {
      entry = { subscription, accepted: 0, delivered: 0, failed: 0 };
      counts.set(subscription, entry);
    }
    return entry;
  };
  const accepted = await query(
    db,
    "SELECT subscription, count(*) AS n FROM events WHERE received_at >= $1 GROUP BY 1",
    [sinceMs],
  );
  for (const row of accepted) of(String(row.subscription)).accepted = Number(row.n);
  const ended = await query(
    db,
    "SELECT subscription, status, count(*) AS n FROM events " +
      "WHERE status IN ('delivered', 'failed') AND updated_at >= $1 GROUP BY 1, 2",
    [sinceMs],
  );
  for (const row of ended) {
    of(String(row.subscription))[row.status === "delivered" ? "delivered" : "failed"] = Number(
      row.n,
    );
  }
  return [...counts.values()].sort((a, b) => a.subscription < b.subscription ? -1 : 1);
}
