// deno-lint-ignore-file require-await -- async by StateStore's contract, synchronous inside
/**
 * Coalescing in the SQLite store (docs/subscriptions.md#coalescing): the window of a key lives
 * in the events themselves. Every event of an open window is `queued` and due when the window
 * ends; a new one moves them all later, never past the first arrival + the maximum. The claim
 * of the first one folds the others into its run (they stay queued with no due time, pointing
 * at it), and the run's outcome becomes theirs. Each step is part of a transaction the store
 * runs anyway (the accept's group commit, the claim, the outcome), so a gateway killed at any
 * point finds a window, or a run and its folded events, whole.
 *
 * @module
 */
import type { NewEvent, StateStore, StoredEvent } from "../mod.ts";
import { rowToEvent } from "../_rows.ts";
import { preparedOnFirstUse, type Row, type StoreCore } from "./_store_core.ts";

/**
 * The events of a key's open window: queued, never claimed, not folded, due. `?1` is the
 * subscription, `?2` the key.
 */
const OPEN_WINDOW = "subscription = ?1 AND coalesce_key = ?2 AND status = 'queued' " +
  "AND coalesced_into IS NULL AND attempts = 0 AND next_attempt_at IS NOT NULL";

/** `alias` is a due event of the open window of `lead` (the run's event), at `?2`. */
function inWindowOf(alias: string): string {
  return `${alias}.subscription = lead.subscription AND ${alias}.coalesce_key = lead.coalesce_key ` +
    `AND ${alias}.status = 'queued' AND ${alias}.coalesced_into IS NULL ` +
    `AND ${alias}.attempts = 0 AND ${alias}.next_attempt_at <= ?2`;
}

/**
 * A window's event `f` that may join the run of `lead`: of the same conversation (or both of
 * none), and not held behind an event of it that runs or arrived before it, other than the lead
 * and the window's own events, which this run answers. So a coalescing key other than the
 * session key still runs a conversation's events one at a time, in arrival order, the claim's
 * rule (`SESSION_FREE` in `_statements.ts`; docs/subscriptions.md#coalescing).
 */
const FOLDABLE = "f.session_key IS lead.session_key AND (f.session_key IS NULL OR NOT EXISTS " +
  "(SELECT 1 FROM events earlier WHERE earlier.subscription = f.subscription " +
  "AND earlier.session_key = f.session_key AND earlier.status IN ('queued', 'running') " +
  "AND (earlier.status = 'running' OR earlier.rowid < f.rowid) AND earlier.id != lead.id " +
  `AND NOT coalesce(${inWindowOf("earlier")}, false)))`;

const STATEMENTS = {
  windowStart: `SELECT min(received_at) AS first FROM events WHERE ${OPEN_WINDOW}`,
  setKey: "UPDATE events SET coalesce_key = ?, next_attempt_at = ? WHERE id = ?",
  slide: `UPDATE events SET next_attempt_at = ?3 WHERE ${OPEN_WINDOW}`,
  // ?1 the run's event, ?2 now: the due events of its window, itself excepted, of its
  // conversation and not held in it (FOLDABLE).
  fold: "UPDATE events SET coalesced_into = ?1, next_attempt_at = NULL, updated_at = ?2 " +
    "WHERE id IN (SELECT f.id FROM events f, events lead WHERE lead.id = ?1 " +
    `AND ${inWindowOf("f")} AND f.id != ?1 AND ${FOLDABLE}) RETURNING id`,
  // Folded events that never ran on their own since (a replay of one runs it alone).
  settle: "UPDATE events SET status = ?1, last_error = ?2, updated_at = ?3 " +
    "WHERE coalesced_into = ?4 AND status IN ('queued', 'failed') " +
    "AND next_attempt_at IS NULL AND attempts = 0",
  folded: "SELECT * FROM events WHERE coalesced_into = ? ORDER BY rowid",
} as const;

/** Prepared on first use: most stores never coalesce, and then prepare nothing. */
const statements = preparedOnFirstUse(STATEMENTS);

/**
 * Opens or slides the window of a coalescing event just inserted, inside the accept's
 * transaction: the event and the others of its open window become due at the same time, its
 * arrival + the window, at most the first arrival + the maximum. Does nothing for an event
 * whose route does not coalesce.
 * @param core the store
 * @param eventId the id the event was inserted with
 * @param event the event, its `route.coalesce` rendered at ingest
 */
export function coalesceAccepted(core: StoreCore, eventId: string, event: NewEvent): void {
  const coalesce = event.route.coalesce;
  if (coalesce === undefined) return;
  const s = statements(core.db);
  const { subscription, receivedAtMs } = event;
  const row = s.windowStart.get(subscription, coalesce.key) as Row | undefined;
  const first = row?.first === null || row?.first === undefined
    ? receivedAtMs
    : Math.min(Number(row.first), receivedAtMs);
  const dueMs = Math.round(
    Math.min(receivedAtMs + coalesce.windowSeconds * 1000, first + coalesce.maxSeconds * 1000),
  );
  s.slide.run(subscription, coalesce.key, dueMs);
  s.setKey.run(coalesce.key, dueMs, eventId);
}

/**
 * Folds the due events of a claimed event's window into its run, inside the claim's
 * transaction. Only the first claim of a window's event folds: a retry, or a run a crash cut
 * off, keeps the events it had.
 * @param core the store
 * @param claimed the event as read before its claim (`attempts` not yet counted)
 * @param nowMs the claim's time, in ms since the epoch
 * @returns the ids folded, which the same claim must not take as events of their own
 */
export function foldOnClaim(core: StoreCore, claimed: StoredEvent, nowMs: number): string[] {
  if (claimed.route.coalesce === undefined || claimed.attempts !== 0) return [];
  if (claimed.coalescedInto !== undefined) return []; // a folded event replayed runs alone
  const rows = statements(core.db).fold.all(claimed.id, nowMs) as Row[];
  return rows.map((row) => String(row.id));
}

/**
 * Gives a run's outcome to the events folded into it, inside the transaction that records the
 * run's own: delivered, or failed with the run's error.
 * @param core the store
 * @param eventId the event whose run it was
 * @param outcome `status`: `delivered` or `failed`; `error`: the run's, for a failure;
 *   `nowMs`: now, in ms since the epoch
 */
export function settleFolded(
  core: StoreCore,
  eventId: string,
  outcome: { status: "delivered" | "failed"; error?: string; nowMs: number },
): void {
  const error = outcome.status === "failed"
    ? `the run of ${eventId}, which answers this event too, failed: ${outcome.error ?? ""}`
    : null;
  statements(core.db).settle.run(outcome.status, error, outcome.nowMs, eventId);
}

/**
 * The store's method that reads what coalescing folded.
 * @param core the store
 * @returns the method, as {@link StateStore} documents it
 */
export function coalesceOps(core: StoreCore): Pick<StateStore, "foldedInto"> {
  return {
    foldedInto: async (eventId) =>
      core.use(() =>
        (statements(core.db).folded.all(eventId) as Row[]).map((row) => rowToEvent(row))
      ),
  };
}
