/**
 * The insert of an event row, shared by accepting an agent-mode event and recording a
 * direct-mode delivery: the row holds its delivery id's idempotency key when asked to.
 *
 * @module
 */
import { type NewEvent, storableText } from "../mod.ts";
import type { Progress } from "../_progress.ts";
import { type Db, query } from "./_core.ts";

// A row that would take a key already held is not inserted (count 0): waiting, if another
// gateway's insert of the same key is not committed yet, for how it ends.
const INSERT_EVENT = "INSERT INTO events (id, subscription, event_type, delivery_id, dedupe, " +
  "source, mode, payload, prompt, route, received_at, status, attempts, next_attempt_at, " +
  "parts_sent, last_error, updated_at, key_expires_at, headers, scheme, coalesce_key, " +
  "session_key, transformed) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, " +
  "$14, $15, $16, $17, $18, $19, $20, $21, $22, $23) " +
  "ON CONFLICT (subscription, delivery_id) WHERE key_expires_at IS NOT NULL DO NOTHING";

/**
 * Inserts an event row; `keyExpiresAtMs` non-null makes it hold the idempotency key of its
 * (subscription, delivery id) until then.
 * @returns false when another row holds that key (nothing was inserted)
 */
export async function insertEvent(
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
