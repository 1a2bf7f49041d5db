/**
 * The store's less frequent writes: replaying an event (`webhook replay`), with a direct
 * message's delivery id key and parts already sent, and retention's deletes.
 *
 * @module
 */
import { ConflictError } from "../../errors.ts";
import { type StateStore, storableText, type StoredEvent } from "../mod.ts";
import { resumeAfter } from "./_direct.ts";
import { type Db, findEvent, keyHolder, mustFind, type PgCore, query, takeKey } from "./_core.ts";
import { rowToEvent } from "../_rows.ts";

/**
 * The store's `replay`.
 * @param core the store
 * @returns the method, as `StateStore.replay` documents it (`lib/state/mod.ts`), asynchronous
 */
export function replayOp(core: PgCore): StateStore["replay"] {
  return (eventId, nowMs, redispatch) =>
    core.use(() =>
      core.sql.begin(async (tx) => {
        const event = await mustFind(tx, eventId);
        await refuseSuperseded(tx, event);
        const dispatch = redispatch?.(event) ?? event;
        let replayed = await requeue(tx, event, {
          nowMs,
          dispatch: { ...dispatch, prompt: storableText(dispatch.prompt) },
        });
        if (replayed.mode !== "direct" || !replayed.dedupe) return replayed;
        // A direct message to send again takes its delivery id now, not once delivered: the
        // sender's retry meanwhile is then told to wait (409), instead of sending a copy.
        await takeKey(tx, replayed, { nowMs, ttlMs: core.ttlMs });
        const resume = await resumeAfter(core, tx, replayed);
        if (resume > replayed.partsSent) {
          await query(tx, "UPDATE events SET parts_sent = $1, updated_at = $2 WHERE id = $3", [
            resume,
            nowMs,
            replayed.id,
          ]);
          replayed = { ...replayed, partsSent: resume };
        }
        return replayed;
      })
    );
}

/**
 * Requeues an event for a new attempt series, in one statement that checks it is not running.
 * @throws ConflictError when the event is running (or was when the gateway holding it stopped)
 */
async function requeue(
  tx: Db,
  event: StoredEvent,
  replay: { nowMs: number; dispatch: Pick<StoredEvent, "mode" | "prompt" | "route"> },
): Promise<StoredEvent> {
  const { nowMs, dispatch } = replay;
  // A direct message not yet delivered whole keeps its parts sent when it is sent the same way
  // again: the replay sends the rest, not the first parts twice.
  const [row] = await query(
    tx,
    "UPDATE events SET status = 'queued', attempts = 0, next_attempt_at = $1, response = NULL, " +
      "parts_sent = CASE WHEN status != 'delivered' AND mode = 'direct' AND $2 = 'direct' " +
      "AND prompt = $3 AND route = $4 THEN parts_sent ELSE 0 END, last_error = NULL, " +
      "uncounted_attempts = 0, updated_at = $1, replayed_at = $1, mode = $2, prompt = $3, " +
      // A replay runs the event's transform again (docs/subscriptions.md#transforms).
      "route = $4, transformed = NULL WHERE id = $5 AND status != 'running' RETURNING *",
    [nowMs, dispatch.mode, dispatch.prompt, JSON.stringify(dispatch.route), event.id],
  );
  if (row === undefined) {
    throw new ConflictError(
      `Cannot replay ${event.id}: it is running, or was when the gateway last stopped (the next ` +
        "start resumes it); wait until it ends",
    );
  }
  return rowToEvent(row);
}

/**
 * Refuses to replay a failed direct message whose delivery id a later event holds, expired or
 * not: the sender's own retry delivered it (or is being sent), so a replay would send it twice.
 * @throws ConflictError naming that event
 */
async function refuseSuperseded(tx: Db, event: StoredEvent): Promise<void> {
  if (event.mode !== "direct" || event.status === "delivered" || !event.dedupe) return;
  const holder = await keyHolder(tx, event);
  if (holder === undefined || holder.id === event.id) return;
  const other = await findEvent(tx, holder.id);
  // An older message that reused the delivery id past its key's life is not this one's retry.
  if (other !== null && other.receivedAtMs <= event.receivedAtMs) return;
  throw new ConflictError(
    `Not replayed: the sender retried delivery ${event.deliveryId} after ${event.id} failed, ` +
      `and that retry is event ${holder.id} (${other?.status ?? "unknown"}); replaying ` +
      `${event.id} would send the message twice. To send it once more anyway: ` +
      `agent webhook replay ${holder.id}`,
  );
}

/**
 * Deletes delivered and failed events received (and, if replayed, replayed) before the
 * retention window, oldest first, at most `maxRows`, with their attempts and parts; queued and
 * running events are kept. Rows another gateway's prune is deleting are skipped, not waited for.
 * @param sql the pool
 * @param nowMs current time, in ms since the epoch
 * @param options `retentionDays`: days of finished events to keep; `maxRows`: the batch
 * @returns how many events were deleted
 */
export function prune(
  sql: PgCore["sql"],
  nowMs: number,
  options: { retentionDays: number; maxRows: number },
): Promise<{ events: number }> {
  const cutoff = nowMs - options.retentionDays * 86_400_000;
  return sql.begin(async (tx) => {
    const old = await query(
      tx,
      "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE received_at < $1 " +
        "AND status IN ('delivered', 'failed') AND (replayed_at IS NULL OR replayed_at < $1) " +
        "ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING id",
      [cutoff, options.maxRows],
    );
    const ids = old.map((row) => String(row.id));
    if (ids.length > 0) {
      await query(tx, "DELETE FROM attempts WHERE event_id = ANY($1::text[])", [ids]);
      await query(tx, "DELETE FROM parts WHERE event_id = ANY($1::text[])", [ids]);
    }
    return { events: ids.length };
  });
}
