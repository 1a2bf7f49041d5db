/**
 * Taking events in: accepting an agent-mode event (the insert itself is the duplicate check, in
 * every gateway sharing the database), and the store's methods for direct-mode deliveries
 * (`_direct.ts`) and delivery ids' keys.
 *
 * @module
 */
import { NotFoundError, StoreUnavailableError } from "../../errors.ts";
import type { AcceptResult, NewEvent } from "../mod.ts";
import { coalesceAccepted, lockWindow } from "./_coalesce.ts";
import { type Db, keyHolder, liveKeyHolder, type PgCore, query } from "./_core.ts";
import {
  DIRECT_IN_PROGRESS,
  EVER_DELIVERED,
  mostPartsSent,
  recordDirectNow,
  resumeAfter,
} from "./_direct.ts";
import { queuedProgress } from "../_progress.ts";
import { insertEvent } from "./_insert.ts";
import type { AcceptOps } from "../_ops.ts";

/** How often an accept tries again when another gateway moved a delivery id's key meanwhile. */
const ACCEPT_TRIES = 3;

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

async function acceptNow(core: PgCore, sql: Db, event: NewEvent): Promise<AcceptResult> {
  const nowMs = event.receivedAtMs;
  const id = core.newId();
  const progress = queuedProgress(nowMs);
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
