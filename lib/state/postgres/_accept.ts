/**
 * Taking events in: accepting an agent-mode event (the insert itself is the duplicate check, in
 * every gateway sharing the database), recording a direct-mode delivery and its progress, and the
 * parts of a direct message earlier attempts already got out.
 *
 * @module
 */
import { NotFoundError, StoreUnavailableError } from "../../errors.ts";
import {
  type AcceptResult,
  type AsyncStateStore,
  type DirectOutcome,
  type EventStatus,
  type NewEvent,
  type PartReceipt,
  storableText,
  type StoredEvent,
} from "../mod.ts";
import { coalesceAccepted, lockWindow } from "./_coalesce.ts";
import { type Db, keyHolder, liveKeyHolder, type PgCore, query, releaseKey } from "./_core.ts";

/** The progress columns of a new event row. */
interface Progress {
  status: EventStatus;
  attempts: number;
  nextAttemptAtMs: number | null;
  partsSent: number;
  lastError: string | null;
  updatedAtMs: number;
}

/** What `recordDirectProgress` stores as the error while a message is being sent (as SQLite). */
const DIRECT_IN_PROGRESS = "interrupted: the gateway stopped while sending this message, after " +
  "the parts counted here; a retry of the same delivery id, or agent webhook replay, sends the " +
  "rest";

/** How often an accept tries again when another gateway moved a delivery id's key meanwhile. */
const ACCEPT_TRIES = 3;

// A row that would take a key already held is not inserted (count 0): waiting, if another
// gateway's insert of the same key is not committed yet, for how it ends.
const INSERT_EVENT = "INSERT INTO events (id, subscription, event_type, delivery_id, dedupe, " +
  "source, mode, payload, prompt, route, received_at, status, attempts, next_attempt_at, " +
  "parts_sent, last_error, updated_at, key_expires_at, headers, scheme, coalesce_key, " +
  "session_key, transformed) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, " +
  "$14, $15, $16, $17, $18, $19, $20, $21, $22, $23) " +
  "ON CONFLICT (subscription, delivery_id) WHERE key_expires_at IS NOT NULL DO NOTHING";

const EVER_DELIVERED = "SELECT 1 FROM attempts WHERE event_id = $1 " +
  "AND finished_at IS NOT NULL AND error IS NULL LIMIT 1";

/** The methods of the store that take events in. */
export type AcceptOps = Pick<
  AsyncStateStore,
  | "accept"
  | "recordDirect"
  | "recordDirectProgress"
  | "partsSentByFailedAttempts"
  | "resumeAfter"
  | "keyHolder"
  | "wasDelivered"
>;

/**
 * The store's methods that take events in.
 * @param core the store
 * @returns the methods, as `StateStore` documents them (`lib/state/mod.ts`), asynchronous
 */
export function acceptOps(core: PgCore): AcceptOps {
  const { sql, use } = core;
  return {
    // A coalescing event slides its window in the same transaction, its key's turn taken.
    accept: (event) =>
      use(() =>
        event.route.coalesce === undefined ? acceptNow(core, sql, event) : sql.begin(async (tx) => {
          await lockWindow(tx, event);
          const result = await acceptNow(core, tx, event);
          if (result.status === "accepted") await coalesceAccepted(tx, event);
          return result;
        })
      ),
    recordDirect: (event, outcome) =>
      use(() => sql.begin((tx) => recordDirectNow(core, tx, { event, outcome }))),
    recordDirectProgress: (event, partsSent, progressId) =>
      use(async () => {
        if (progressId === undefined) {
          const outcome = { delivered: false, error: DIRECT_IN_PROGRESS, partsSent };
          return await sql.begin((tx) => recordDirectNow(core, tx, { event, outcome }));
        }
        const updated = await query(
          sql,
          "UPDATE events SET parts_sent = $1, updated_at = $2 WHERE id = $3",
          [partsSent, core.clock(), progressId],
        );
        if (updated.count === 0) throw new NotFoundError(`No event "${progressId}"`);
        return progressId;
      }),
    partsSentByFailedAttempts: (event) => use(() => mostPartsSent(core, sql, event)),
    resumeAfter: (event) => use(() => resumeAfter(core, sql, event)),
    keyHolder: (subscription, deliveryId, nowMs) =>
      use(async () => {
        const key = { subscription, deliveryId };
        if (nowMs !== undefined) return await liveKeyHolder(sql, key, nowMs) ?? null;
        return (await keyHolder(sql, key))?.id ?? null;
      }),
    wasDelivered: (eventId) =>
      use(async () => (await query(sql, EVER_DELIVERED, [eventId])).length > 0),
  };
}

/**
 * See `StateStore.resumeAfter`.
 * @param core the store
 * @param db the pool, or the caller's transaction
 * @param event the stored direct-mode event
 * @returns the parts it resumes after
 */
export async function resumeAfter(core: PgCore, db: Db, event: StoredEvent): Promise<number> {
  if ((await query(db, EVER_DELIVERED, [event.id])).length > 0) return event.partsSent;
  return Math.max(event.partsSent, await mostPartsSent(core, db, event));
}

/**
 * Inserts an event row; `keyExpiresAtMs` non-null makes it hold the idempotency key of its
 * (subscription, delivery id) until then.
 * @returns false when another row holds that key (nothing was inserted)
 */
async function insertEvent(
  db: Db,
  event: NewEvent,
  row: { id: string; progress: Progress; keyExpiresAtMs: number | null },
): Promise<boolean> {
  const { id, progress, keyExpiresAtMs } = row;
  const inserted = await query(db, INSERT_EVENT, [
    id,
    event.subscription,
    event.eventLabel,
    event.deliveryId,
    event.dedupe,
    event.source,
    event.mode,
    event.payload,
    storableText(event.prompt),
    JSON.stringify(event.route),
    event.receivedAtMs,
    progress.status,
    progress.attempts,
    progress.nextAttemptAtMs,
    progress.partsSent,
    progress.lastError === null ? null : storableText(progress.lastError),
    progress.updatedAtMs,
    keyExpiresAtMs,
    event.headers === undefined ? null : JSON.stringify(event.headers),
    event.scheme ?? null,
    event.route.coalesce?.key ?? null,
    event.sessionKey ?? null,
    event.transformed ?? null,
  ]);
  return inserted.count === 1;
}

async function acceptNow(core: PgCore, sql: Db, event: NewEvent): Promise<AcceptResult> {
  const nowMs = event.receivedAtMs;
  const id = core.newId();
  const progress: Progress = {
    status: "queued",
    attempts: 0,
    nextAttemptAtMs: nowMs,
    partsSent: 0,
    lastError: null,
    updatedAtMs: nowMs,
  };
  // One statement in the common case: the insert itself is the duplicate check, committed on
  // its own. An event without a real delivery id holds no key, so it is always inserted.
  const keyExpiresAtMs = event.dedupe ? nowMs + core.ttlMs : null;
  for (let tries = 0; tries < ACCEPT_TRIES; tries++) {
    if (await insertEvent(sql, event, { id, progress, keyExpiresAtMs })) {
      return { status: "accepted", eventId: id };
    }
    const holder = await keyHolder(sql, event);
    if (holder !== undefined && holder.expiresAtMs > nowMs) {
      return { status: "duplicate", eventId: holder.id };
    }
    // The key has expired (or was released meanwhile): the new event takes it over, unless
    // another gateway's accept does first, which the next round finds.
    if (holder !== undefined) {
      await query(
        sql,
        "UPDATE events SET key_expires_at = NULL WHERE id = $1 AND key_expires_at <= $2",
        [holder.id, nowMs],
      );
    }
  }
  // Never a 202 for an event that is not stored: the sender gets 503 and sends it again.
  throw new StoreUnavailableError(
    `the delivery id ${event.deliveryId} of ${event.subscription} changed hands ${ACCEPT_TRIES} ` +
      "times while it was accepted; the event was not stored",
  );
}

async function recordDirectNow(
  core: PgCore,
  tx: Db,
  { event, outcome }: { event: NewEvent; outcome: DirectOutcome },
): Promise<string> {
  const nowMs = outcome.atMs ?? core.clock();
  const lastError = outcome.delivered ? null : storableText(outcome.error ?? "delivery failed");
  const holdsKey = outcome.delivered && event.dedupe;
  const keyExpiresAtMs = holdsKey ? nowMs + core.ttlMs : null;
  // A delivered message takes the key over from any earlier holder, expired or not.
  if (holdsKey) await releaseKey(tx, event);
  if (outcome.progressId !== undefined) {
    // The record of its progress becomes the record of the outcome, unless a replay took it
    // over meanwhile (or it is gone): then the outcome is recorded on its own.
    const finished = await query(
      tx,
      "UPDATE events SET status = $1, parts_sent = $2, last_error = $3, updated_at = $4, " +
        "key_expires_at = $5 WHERE id = $6 AND mode = 'direct' AND status = 'failed' " +
        "AND last_error = $7",
      [
        outcome.delivered ? "delivered" : "failed",
        outcome.partsSent,
        lastError,
        nowMs,
        keyExpiresAtMs,
        outcome.progressId,
        DIRECT_IN_PROGRESS,
      ],
    );
    if (finished.count === 1) {
      await closeLastAttempt(tx, outcome.progressId, { nowMs, step: "delivery", error: lastError });
      await insertReceipts(tx, outcome.progressId, outcome.receipts);
      return outcome.progressId;
    }
  }
  const id = core.newId();
  await insertEvent(tx, event, {
    id,
    progress: {
      status: outcome.delivered ? "delivered" : "failed",
      attempts: 1,
      nextAttemptAtMs: null,
      partsSent: outcome.partsSent,
      lastError,
      updatedAtMs: nowMs,
    },
    keyExpiresAtMs,
  });
  await query(
    tx,
    "INSERT INTO attempts (event_id, attempt, started_at, finished_at, step, error) " +
      "VALUES ($1, 1, $2, $3, 'delivery', $4)",
    [id, event.receivedAtMs, nowMs, lastError],
  );
  await insertReceipts(tx, id, outcome.receipts);
  return id;
}

/**
 * Closes an event's latest attempt with its step and error (null: it succeeded).
 * @param db the caller's transaction
 */
export async function closeLastAttempt(
  db: Db,
  eventId: string,
  attempt: { nowMs: number; step: string; error: string | null },
): Promise<void> {
  await query(
    db,
    "UPDATE attempts SET finished_at = $1, step = $2, error = $3 " +
      "WHERE seq = (SELECT max(seq) FROM attempts WHERE event_id = $4)",
    [attempt.nowMs, attempt.step, attempt.error, eventId],
  );
}

/**
 * Records what the platforms answered for the parts of an event's message.
 * @param db the caller's transaction
 * @param eventId the event the parts belong to
 * @param receipts the parts' receipts, in the order they were sent; none when undefined
 */
export async function insertReceipts(
  db: Db,
  eventId: string,
  receipts: readonly PartReceipt[] | undefined,
): Promise<void> {
  for (const receipt of receipts ?? []) {
    await query(
      db,
      "INSERT INTO parts (event_id, part, parts, target, chat, message_id, url, sent_at) " +
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
      [
        eventId,
        receipt.part,
        receipt.parts,
        receipt.target,
        receipt.chat,
        receipt.messageId,
        receipt.url,
        receipt.sentAtMs,
      ],
    );
  }
}

/**
 * The most parts that failed direct attempts at the same message (subscription, delivery id,
 * text and route, within the key's life) got out.
 */
async function mostPartsSent(core: PgCore, db: Db, event: NewEvent): Promise<number> {
  const [row] = await query(
    db,
    "SELECT max(parts_sent) AS parts FROM events WHERE subscription = $1 AND delivery_id = $2 " +
      "AND mode = 'direct' AND status = 'failed' AND parts_sent > 0 AND prompt = $3 " +
      "AND route = $4 AND received_at > $5",
    [
      event.subscription,
      event.deliveryId,
      storableText(event.prompt),
      JSON.stringify(event.route),
      event.receivedAtMs - core.ttlMs,
    ],
  );
  return Number(row?.parts ?? 0);
}
