/**
 * The outcome writes of a run: its answer, what its transform printed, the parts it delivered,
 * and its end (delivered, to retry, failed). Each names the claim's lease token, so a run whose
 * lease ended, its event claimed again by another gateway, records nothing: the write rejects
 * with ConflictError.
 *
 * @module
 */
import { ConflictError, NotFoundError } from "../../errors.ts";
import { type AgentRun, type PartReceipt, storableText } from "../mod.ts";
import { settleFolded } from "./_coalesce.ts";
import { closeLastAttempt, type Db, insertReceipts, type PgCore, query, takeKey } from "./_core.ts";
import type { Row } from "../_rows.ts";
import { recordTurn } from "./_sessions.ts";

/**
 * See `StateStore.saveResponse`: the answer, the run on its attempt, and the conversation's turn,
 * in one transaction.
 */
export async function saveResponse(
  core: PgCore,
  eventId: string,
  answered: { response: string; run?: AgentRun },
): Promise<void> {
  const { run } = answered;
  const answer = storableText(answered.response);
  await core.sql.begin(async (tx) => {
    const nowMs = core.clock();
    await updateLeased(core, tx, eventId, {
      set: "response = $1, updated_at = $2",
      params: [answer, nowMs],
    });
    await recordTurn(tx, { eventId, answer, atMs: nowMs });
    await query(
      tx,
      "UPDATE attempts SET step = 'delivery', provider = $1, model = $2, " +
        "prompt_tokens = $3, completion_tokens = $4, run_ms = $5, answer = $6 " +
        "WHERE seq = (SELECT max(seq) FROM attempts WHERE event_id = $7)",
      [
        run?.provider ?? null,
        run?.model ?? null,
        run?.promptTokens ?? null,
        run?.completionTokens ?? null,
        run === undefined ? null : Math.round(run.durationMs),
        answer,
        eventId,
      ],
    );
  });
}

/** See `StateStore.saveTransformed`. */
export async function saveTransformed(
  core: PgCore,
  eventId: string,
  rendered: { transformed: string; prompt: string },
): Promise<void> {
  await updateLeased(core, core.sql, eventId, {
    set: "transformed = $1, prompt = $2, updated_at = $3",
    params: [rendered.transformed, storableText(rendered.prompt), core.clock()],
  });
}

/** See `StateStore.savePartsSent`. */
export async function savePartsSent(
  core: PgCore,
  eventId: string,
  sent: { partsSent: number; sentBefore: number; parts: number; receipts?: PartReceipt[] },
): Promise<void> {
  await core.sql.begin(async (tx) => {
    // The first save of an attempt beyond the parts out when it began, with parts still to go,
    // marks the attempt as one that does not count (see lib/state/mod.ts).
    await updateLeased(core, tx, eventId, {
      set: "uncounted_attempts = uncounted_attempts + CASE WHEN parts_sent = $3::int " +
        "AND $1::int > $3::int AND $1::int < $4::int THEN 1 ELSE 0 END, " +
        "parts_sent = $1::int, updated_at = $2",
      params: [sent.partsSent, core.clock(), sent.sentBefore, sent.parts],
    });
    await insertReceipts(tx, eventId, sent.receipts);
  });
}

/**
 * Runs an UPDATE of an event this store's claim holds (or that no claim holds), naming the
 * claim's lease token. `$n` in `set` counts from `$1`; the id and token follow.
 * @returns the updated row
 * @throws NotFoundError when no event has this id
 * @throws ConflictError when another claim holds the event: this store's lease ended
 */
async function updateLeased(
  core: PgCore,
  tx: Db,
  eventId: string,
  update: { set: string; params: (string | number | null)[] },
): Promise<Row> {
  const token = core.leases.token(eventId) ?? null;
  const n = update.params.length;
  const [row] = await query(
    tx,
    `UPDATE events SET ${update.set} WHERE id = $${n + 1} ` +
      `AND lease_token IS NOT DISTINCT FROM $${n + 2} RETURNING *`,
    [...update.params, eventId, token],
  );
  if (row) return row;
  const [exists] = await query(tx, "SELECT 1 FROM events WHERE id = $1", [eventId]);
  if (!exists) throw new NotFoundError(`No event "${eventId}"`);
  core.leases.release(eventId);
  throw new ConflictError(
    `Not recorded: the lease on ${eventId} ended before this run's outcome was written, and ` +
      "another gateway runs it again (state.lease_seconds, docs/scaling.md)",
  );
}

/** See `StateStore.markDelivered`. */
export async function markDelivered(core: PgCore, eventId: string, nowMs: number): Promise<void> {
  await core.sql.begin(async (tx) => {
    const row = await updateLeased(core, tx, eventId, {
      set: "status = 'delivered', next_attempt_at = NULL, last_error = NULL, updated_at = $1, " +
        "lease_token = NULL, lease_expires_at = NULL, lease_owner = NULL",
      params: [nowMs],
    });
    await closeLastAttempt(tx, eventId, { nowMs, step: "delivery", error: null });
    await settleFolded(tx, eventId, { status: "delivered", nowMs });
    const keyLive = row.key_expires_at !== null && Number(row.key_expires_at) > nowMs;
    if (row.dedupe === true && !keyLive) {
      await takeKey(tx, {
        id: eventId,
        subscription: String(row.subscription),
        deliveryId: String(row.delivery_id),
      }, { nowMs, ttlMs: core.ttlMs });
    }
  });
  core.leases.release(eventId);
}

/** Closes a running event's attempt with its error, and the event with its new status. */
export async function closeAttempt(
  core: PgCore,
  eventId: string,
  attempt: {
    status: "queued" | "failed";
    error: string;
    step: string;
    nextMs: number | null;
    nowMs: number;
  },
): Promise<void> {
  const error = storableText(attempt.error);
  await core.sql.begin(async (tx) => {
    await updateLeased(core, tx, eventId, {
      set: "status = $1, next_attempt_at = $2, last_error = $3, updated_at = $4, " +
        "lease_token = NULL, lease_expires_at = NULL, lease_owner = NULL",
      params: [attempt.status, attempt.nextMs, error, attempt.nowMs],
    });
    await closeLastAttempt(tx, eventId, { nowMs: attempt.nowMs, step: attempt.step, error });
    // A direct message that failed, never delivered, holds no key (as when recorded failed).
    if (attempt.status !== "failed") return;
    await settleFolded(tx, eventId, { status: "failed", error, nowMs: attempt.nowMs });
    await query(
      tx,
      "UPDATE events SET key_expires_at = NULL WHERE id = $1 AND mode = 'direct' " +
        "AND status = 'failed' AND key_expires_at IS NOT NULL AND NOT EXISTS (SELECT 1 " +
        "FROM attempts WHERE event_id = $1 AND finished_at IS NOT NULL AND error IS NULL)",
      [eventId],
    );
  });
  core.leases.release(eventId);
}
