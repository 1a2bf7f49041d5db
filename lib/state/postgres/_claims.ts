/**
 * The worker's side of the store, for any number of gateways sharing the database: claiming due
 * events (`FOR UPDATE SKIP LOCKED`, so two gateways never claim one event) under a lease, saving
 * an attempt's answer and parts, closing it as delivered, to retry or failed (each write naming
 * the claim's lease token, so a run whose lease was lost records nothing), and requeueing the
 * events whose lease ended with the gateway that held them.
 *
 * @module
 */
import { needsAgentRun, type StoredEvent } from "../mod.ts";
import { FIRST_OF_WINDOW, foldOnClaim } from "./_coalesce.ts";
import { type PgCore, query } from "./_core.ts";
import {
  closeAttempt,
  markDelivered,
  savePartsSent,
  saveResponse,
  saveTransformed,
} from "./_outcomes.ts";
import { nextDueAtMs, recoverInterrupted } from "./_recovery.ts";
import { rowToEvent } from "../_rows.ts";
import { SESSION_FREE } from "./_sessions.ts";
import type { ClaimOps } from "../_ops.ts";

/**
 * The store's methods that the worker runs events with.
 * @param core the store
 * @returns the methods, as `StateStore` documents them (`lib/state/mod.ts`), asynchronous; an
 *   outcome write whose lease another gateway took over rejects with ConflictError
 */
export function claimOps(core: PgCore): ClaimOps {
  const { sql, use } = core;
  return {
    claimDue: (nowMs, limit, options = {}) =>
      use(() => claimDue(core, { nowMs, limit, deliveryOnly: options.deliveryOnly === true })),
    saveResponse: (eventId, response, run) =>
      use(() => saveResponse(core, eventId, { response, run })),
    saveTransformed: (eventId, transformed, prompt) =>
      use(() => saveTransformed(core, eventId, { transformed, prompt })),
    savePartsSent: (eventId, partsSent, attempt) =>
      use(() => savePartsSent(core, eventId, { partsSent, ...attempt })),
    markDelivered: (eventId, nowMs) => use(() => markDelivered(core, eventId, nowMs)),
    markRetry: (eventId, { error, step, nextAttemptAtMs, nowMs }) =>
      use(() =>
        closeAttempt(core, eventId, {
          status: "queued",
          error,
          step,
          nextMs: nextAttemptAtMs,
          nowMs,
        })
      ),
    markFailed: (eventId, { error, step, nowMs }) =>
      use(() =>
        closeAttempt(core, eventId, { status: "failed", error, step, nextMs: null, nowMs })
      ),
    recoverInterrupted: (nowMs, eventId) =>
      use(() => sql.begin((tx) => recoverInterrupted(core, tx, { nowMs, eventId }))),
    nextDueAtMs: () => use(() => nextDueAtMs(core)),
    moveQueued: (byMs) =>
      use(async () =>
        (await query(
          sql,
          "UPDATE events SET next_attempt_at = next_attempt_at + $1 WHERE status = 'queued'",
          [Math.round(byMs)],
        )).count
      ),
  };
}

/** See `StateStore.claimDue`: requeues the events of lapsed leases, then claims. */
function claimDue(
  core: PgCore,
  claim: { nowMs: number; limit: number; deliveryOnly: boolean },
): Promise<StoredEvent[]> {
  const { nowMs, limit } = claim;
  if (limit <= 0) return Promise.resolve([]);
  const delivery = claim.deliveryOnly ? "AND (mode = 'direct' OR response IS NOT NULL)" : "";
  return core.sql.begin(async (tx) => {
    await recoverInterrupted(core, tx, { nowMs, lapsedOnly: true });
    const rows = await query(
      tx,
      "WITH due AS (SELECT id, next_attempt_at AS due_at, seq FROM events e " +
        `WHERE status = 'queued' AND next_attempt_at <= $1 ${delivery} ` +
        `AND ${FIRST_OF_WINDOW} AND ${SESSION_FREE} ` +
        "ORDER BY next_attempt_at, seq LIMIT $2 FOR UPDATE SKIP LOCKED) " +
        "UPDATE events e SET status = 'running', attempts = e.attempts + 1, " +
        "next_attempt_at = NULL, updated_at = $1, lease_token = gen_random_uuid()::text, " +
        "lease_expires_at = $3, lease_owner = $4 FROM due WHERE e.id = due.id " +
        "RETURNING e.*, due.due_at, due.seq AS due_seq",
      [nowMs, limit, nowMs + core.leases.leaseMs, core.ownerId],
    );
    const ordered = [...rows].sort((a, b) =>
      Number(a.due_at) - Number(b.due_at) || Number(a.due_seq) - Number(b.due_seq)
    );
    const claimed: StoredEvent[] = [];
    for (const row of ordered) {
      const event = rowToEvent(row);
      await query(
        tx,
        "INSERT INTO attempts (event_id, attempt, started_at, step) VALUES ($1, $2, $3, $4)",
        [event.id, event.attempts, nowMs, needsAgentRun(event) ? "agent" : "delivery"],
      );
      await foldOnClaim(tx, event, nowMs);
      claimed.push(event);
    }
    // Held once the claim is committed: a heartbeat must not name a claim that rolled back.
    return { claimed, tokens: ordered.map((row) => [String(row.id), String(row.lease_token)]) };
  }).then(({ claimed, tokens }) => {
    for (const [id, token] of tokens) core.leases.hold(id, token);
    return claimed;
  });
}
