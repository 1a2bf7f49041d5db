/**
 * Coalescing in the PostgreSQL store (docs/subscriptions.md#coalescing), as SQLite's: a key's
 * window lives in its events, all `queued` and due when the window ends; the claim of the first
 * folds the others into its run, and the run's outcome becomes theirs. With several gateways,
 * accepts of one key take turns (an advisory lock on the key), and only the first event of an
 * open window can be claimed, so no gateway runs another event of it on its own.
 *
 * @module
 */
import type { NewEvent, StateStore, StoredEvent } from "../mod.ts";
import { type Db, type PgCore, query } from "./_core.ts";
import { rowToEvent } from "../_rows.ts";

/** The events of a key's open window: queued, never claimed, not folded, due. */
const OPEN_WINDOW = "subscription = $1 AND coalesce_key = $2 AND status = 'queued' " +
  "AND coalesced_into IS NULL AND attempts = 0 AND next_attempt_at IS NOT NULL";

/**
 * What the claim's query adds for coalescing: an event of an open window is claimable only as
 * its first (the others are folded into its run). `e` is the candidate row.
 */
export const FIRST_OF_WINDOW = "(e.coalesce_key IS NULL OR e.attempts > 0 " +
  "OR e.coalesced_into IS NOT NULL OR NOT EXISTS (SELECT 1 FROM events o " +
  "WHERE o.subscription = e.subscription AND o.coalesce_key = e.coalesce_key " +
  "AND o.status = 'queued' AND o.coalesced_into IS NULL AND o.attempts = 0 " +
  "AND o.next_attempt_at IS NOT NULL AND o.seq < e.seq))";

/** `alias` is a due event of the open window of `lead` (the run's event), at `$2`. */
function inWindowOf(alias: string): string {
  return `${alias}.subscription = lead.subscription AND ${alias}.coalesce_key = lead.coalesce_key ` +
    `AND ${alias}.status = 'queued' AND ${alias}.coalesced_into IS NULL ` +
    `AND ${alias}.attempts = 0 AND ${alias}.next_attempt_at <= $2`;
}

/**
 * A window's event `f` that may join the run of `lead`: of the same conversation (or both of
 * none), and not held behind an event of it that runs or arrived before it, other than the lead
 * and the window's own events, which this run answers: a conversation's events still run one at
 * a time, in arrival order, the claim's rule (`SESSION_FREE`; docs/subscriptions.md#coalescing).
 */
const FOLDABLE = "f.session_key IS NOT DISTINCT FROM lead.session_key AND (f.session_key IS NULL " +
  "OR NOT EXISTS (SELECT 1 FROM events earlier WHERE earlier.subscription = f.subscription " +
  "AND earlier.session_key = f.session_key AND earlier.status IN ('queued', 'running') " +
  "AND (earlier.status = 'running' OR earlier.seq < f.seq) AND earlier.id != lead.id " +
  `AND NOT coalesce(${inWindowOf("earlier")}, false)))`;

/**
 * Takes the key's turn for the accept's transaction: accepts of one key in other gateways wait.
 * @param tx the accept's transaction
 * @param event the event, whose route coalesces
 */
export async function lockWindow(tx: Db, event: NewEvent): Promise<void> {
  const key = event.route.coalesce?.key ?? "";
  await query(tx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [
    `${event.subscription}/${key}`,
  ]);
}

/**
 * Opens or slides the window of a coalescing event just inserted, inside the accept's
 * transaction (after {@link lockWindow}): it and the others of its open window become due at its
 * arrival + the window, at most the first arrival + the maximum.
 * @param tx the accept's transaction
 * @param event the event, its `route.coalesce` rendered at ingest
 */
export async function coalesceAccepted(tx: Db, event: NewEvent): Promise<void> {
  const coalesce = event.route.coalesce;
  if (coalesce === undefined) return;
  const { subscription, receivedAtMs } = event;
  const [row] = await query(
    tx,
    `SELECT min(received_at) AS first FROM events WHERE ${OPEN_WINDOW}`,
    [subscription, coalesce.key],
  );
  const first = row?.first === null || row?.first === undefined
    ? receivedAtMs
    : Math.min(Number(row.first), receivedAtMs);
  const dueMs = Math.round(
    Math.min(receivedAtMs + coalesce.windowSeconds * 1000, first + coalesce.maxSeconds * 1000),
  );
  // An event of the window that a claim holds now is skipped, not waited for (the claim would
  // wait in turn for this accept's rows as it folds them): its run has begun without this one.
  await query(
    tx,
    "UPDATE events SET next_attempt_at = $3 WHERE id IN (SELECT id FROM events " +
      `WHERE ${OPEN_WINDOW} FOR UPDATE SKIP LOCKED)`,
    [
      subscription,
      coalesce.key,
      dueMs,
    ],
  );
}

/**
 * Folds the due events of a claimed event's window into its run, inside the claim's
 * transaction; only the first claim of a window's event folds.
 * @param tx the claim's transaction
 * @param claimed the event as claimed (`attempts` counted: 1 on its first claim)
 * @param nowMs the claim's time, in ms since the epoch
 */
export async function foldOnClaim(tx: Db, claimed: StoredEvent, nowMs: number): Promise<void> {
  if (claimed.route.coalesce === undefined || claimed.attempts !== 1) return;
  if (claimed.coalescedInto !== undefined) return; // a folded event replayed runs alone
  await query(
    tx,
    "UPDATE events SET coalesced_into = $1, next_attempt_at = NULL, updated_at = $2 " +
      "WHERE id IN (SELECT f.id FROM events f, events lead WHERE lead.id = $1 " +
      `AND ${inWindowOf("f")} AND f.id != $1 AND ${FOLDABLE})`,
    [claimed.id, nowMs],
  );
}

/**
 * Gives a run's outcome to the events folded into it (those that did not run on their own since),
 * inside the transaction that records the run's own.
 * @param tx that transaction
 * @param eventId the event whose run it was
 * @param outcome `status`: `delivered` or `failed`; `error`: the run's; `nowMs`: now, in ms
 */
export async function settleFolded(
  tx: Db,
  eventId: string,
  outcome: { status: "delivered" | "failed"; error?: string; nowMs: number },
): Promise<void> {
  const error = outcome.status === "failed"
    ? `the run of ${eventId}, which answers this event too, failed: ${outcome.error ?? ""}`
    : null;
  await query(
    tx,
    "UPDATE events SET status = $1, last_error = $2, updated_at = $3 WHERE coalesced_into = $4 " +
      "AND status IN ('queued', 'failed') AND next_attempt_at IS NULL AND attempts = 0",
    [outcome.status, error, outcome.nowMs, eventId],
  );
}

/**
 * The store's method that reads what coalescing folded.
 * @param core the store
 * @returns the method, as `StateStore.foldedInto` documents it, asynchronous
 */
export function coalesceOps(core: PgCore): Pick<StateStore, "foldedInto"> {
  return {
    foldedInto: (eventId) =>
      core.use(async () =>
        (await query(core.sql, "SELECT * FROM events WHERE coalesced_into = $1 ORDER BY seq", [
          eventId,
        ])).map(rowToEvent)
      ),
  };
}
