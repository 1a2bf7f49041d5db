/**
 * The runs a stop or a crash cut off: requeueing them, when their gateway stopped gracefully, is
 * started again, or died (its leases ended); and when the worker next has something to do,
 * which includes the end of another gateway's lease.
 *
 * @module
 */
import { type Db, type PgCore, query } from "./_core.ts";
import { SESSION_FREE } from "./_sessions.ts";

const INTERRUPTED = "interrupted: the gateway stopped during this attempt";

/**
 * Requeues running events, due now, their open attempt closed as interrupted: one event of this
 * store's (`eventId`: a graceful stop, which does not count); or, at start and before each claim
 * (`lapsedOnly`), the events whose lease ended, those of a gateway that died, which count as a
 * crash does; and at start also this gateway's own (its worker, or itself, started again).
 * @returns how many were requeued
 */
export async function recoverInterrupted(
  core: PgCore,
  tx: Db,
  recovery: { nowMs: number; eventId?: string; lapsedOnly?: boolean },
): Promise<number> {
  const { nowMs, eventId } = recovery;
  const own = core.leases.tokens();
  const lapsed = "(lease_expires_at IS NULL OR lease_expires_at <= $1)";
  const which = eventId !== undefined
    ? "id = $2 AND lease_token IS NOT DISTINCT FROM $3"
    : recovery.lapsedOnly
    ? `${lapsed} AND NOT (coalesce(lease_token, '') = ANY($2::text[]))`
    : `(${lapsed} OR lease_token = ANY($2::text[]) OR lease_owner = $3)`;
  const params = eventId !== undefined
    ? [nowMs, eventId, core.leases.token(eventId) ?? null]
    : recovery.lapsedOnly
    ? [nowMs, own]
    : [nowMs, own, core.ownerId];
  const uncount = eventId === undefined ? "" : "uncounted_attempts = uncounted_attempts + 1, ";
  // Events another gateway is recovering (or claiming) now are skipped, not waited for: two
  // gateways recovering together neither wait on each other nor requeue one event twice.
  const requeued = await query(
    tx,
    `UPDATE events SET status = 'queued', next_attempt_at = $1, ${uncount}updated_at = $1, ` +
      "lease_token = NULL, lease_expires_at = NULL, lease_owner = NULL WHERE id IN " +
      `(SELECT id FROM events WHERE status = 'running' AND ${which} FOR UPDATE SKIP LOCKED) ` +
      "RETURNING id",
    params,
  );
  if (requeued.length === 0) return 0;
  const ids = requeued.map((row) => String(row.id));
  await query(
    tx,
    "UPDATE attempts SET finished_at = $1, error = $2 WHERE finished_at IS NULL " +
      "AND event_id = ANY($3::text[])",
    [nowMs, INTERRUPTED, ids],
  );
  for (const id of ids) core.leases.release(id);
  return ids.length;
}

/**
 * See `StateStore.nextDueAtMs`: the earliest queued event that may run (not waiting for an
 * earlier one of its conversation), or the earliest end of another store's lease, when its
 * event is claimed again.
 */
export async function nextDueAtMs(core: PgCore): Promise<number | null> {
  const [row] = await query(
    core.sql,
    "SELECT least((SELECT next_attempt_at FROM events e WHERE status = 'queued' " +
      `AND next_attempt_at IS NOT NULL AND ${SESSION_FREE} ORDER BY next_attempt_at LIMIT 1), ` +
      "(SELECT min(coalesce(lease_expires_at, 0)) FROM events WHERE status = 'running' " +
      "AND NOT (coalesce(lease_token, '') = ANY($1::text[])))) AS due",
    [core.leases.tokens()],
  );
  return row?.due === null || row?.due === undefined ? null : Number(row.due);
}
