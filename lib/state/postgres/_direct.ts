/**
 * Direct-mode deliveries: recording one after it went out (or its progress while it goes), and
 * the parts earlier failed attempts at the same message already got out, which a retry or a
 * replay resumes after.
 *
 * @module
 */
import { finishedProgress } from "../_progress.ts";
import { type DirectOutcome, type NewEvent, storableText, type StoredEvent } from "../mod.ts";
import {
  closeLastAttempt,
  type Db,
  insertReceipts,
  type PgCore,
  query,
  releaseKey,
} from "./_core.ts";
import { insertEvent } from "./_insert.ts";

/** What `recordDirectProgress` stores as the error while a message is being sent (as SQLite). */
export const DIRECT_IN_PROGRESS = "interrupted: the gateway stopped while sending this " +
  "message, after the parts counted here; a retry of the same delivery id, or agent webhook " +
  "replay, sends the rest";

/** A row when an attempt at the event (`$1`) ever ended delivered. */
export const EVER_DELIVERED = "SELECT 1 FROM attempts WHERE event_id = $1 " +
  "AND finished_at IS NOT NULL AND error IS NULL LIMIT 1";

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
 * Records a direct delivery's outcome (see `StateStore.recordDirect`), on the event of its
 * progress when there is one, in the caller's transaction.
 * @returns the event id
 */
export async function recordDirectNow(
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
    progress: finishedProgress(outcome, { lastError, nowMs }),
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
 * The most parts that failed direct attempts at the same message (subscription, delivery id,
 * text and route, within the key's life) got out.
 */
export async function mostPartsSent(core: PgCore, db: Db, event: NewEvent): Promise<number> {
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
