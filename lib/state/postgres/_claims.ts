/**
 * The worker's side of the store, for any number of gateways sharing the database: claiming due
 * events (`FOR UPDATE SKIP LOCKED`, so two gateways never claim one event) under a lease, saving
 * an attempt's answer and parts, closing it as delivered, to retry or failed (each write naming
 * the claim's lease token, so a run whose lease was lost records nothing), and requeueing the
 * events whose lease ended with the gateway that held them.
 *
 * @module
 */
import { ConflictError, NotFoundError } from "../../errors.ts";
import { type AsyncStateStore, needsAgentRun, storableText, type StoredEvent } from "../mod.ts";
import { closeLastAttempt, insertReceipts } from "./_accept.ts";
import { FIRST_OF_WINDOW, foldOnClaim, settleFolded } from "./_coalesce.ts";
import { recordTurn, SESSION_FREE } from "./_sessions.ts";
import { type Db, type PgCore, query, takeKey } from "./_core.ts";
import { type Row, rowToEvent } from "./_schema.ts";

/** The methods of the store that the worker runs events with. */
export type ClaimOps = Pick<
  AsyncStateStore,
  | "claimDue"
  | "saveResponse"
  | "saveTransformed"
  | "savePartsSent"
  | "markDelivered"
  | "markRetry"
  | "markFailed"
  | "recoverInterrupted"
  | "nextDueAtMs"
  | "moveQueued"
>;

const INTERRUPTED = "interrupted: the gateway stopped during this attempt";

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
      use(() =>
        sql.begin(async (tx) => {
          const answer = storableText(response);
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
        })
      ),
    saveTransformed: (eventId, transformed, prompt) =>
      use(async () => {
        await updateLeased(core, sql, eventId, {
          set: "transformed = $1, prompt = $2, updated_at = $3",
          params: [transformed, storableText(prompt), core.clock()],
        });
      }),
    savePartsSent: (eventId, partsSent, attempt) =>
      use(() =>
        sql.begin(async (tx) => {
          // The first save of an attempt beyond the parts out when it began, with parts still
          // to go, marks the attempt as one that does not count (see lib/state/mod.ts).
          await updateLeased(core, tx, eventId, {
            set: "uncounted_attempts = uncounted_attempts + CASE WHEN parts_sent = $3::int " +
              "AND $1::int > $3::int AND $1::int < $4::int THEN 1 ELSE 0 END, " +
              "parts_sent = $1::int, updated_at = $2",
            params: [partsSent, core.clock(), attempt.sentBefore, attempt.parts],
          });
          await insertReceipts(tx, eventId, attempt.receipts);
        })
      ),
    markDelivered: (eventId, nowMs) => use(() => markDelivered(core, eventId, nowMs)),
    markRetry: (eventId, retry) =>
      use(() =>
        closeAttempt(core, eventId, {
          status: "queued",
          error: retry.error,
          step: retry.step,
          nextMs: retry.nextAttemptAtMs,
          nowMs: retry.nowMs,
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
async function markDelivered(core: PgCore, eventId: string, nowMs: number): Promise<void> {
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
async function closeAttempt(
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

/**
 * Requeues running events, due now, their open attempt closed as interrupted: one event of this
 * store's (`eventId`: a graceful stop, which does not count); or, at start and before each claim
 * (`lapsedOnly`), the events whose lease ended, those of a gateway that died, which count as a
 * crash does; and at start also this gateway's own (its worker, or itself, started again).
 * @returns how many were requeued
 */
async function recoverInterrupted(
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
  const requeued = await query(
    tx,
    `UPDATE events SET status = 'queued', next_attempt_at = $1, ${uncount}updated_at = $1, ` +
      "lease_token = NULL, lease_expires_at = NULL, lease_owner = NULL " +
      `WHERE status = 'running' AND ${which} ` +
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
async function nextDueAtMs(core: PgCore): Promise<number | null> {
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
