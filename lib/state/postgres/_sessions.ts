/**
 * Conversations in the PostgreSQL store (docs/subscriptions.md#conversations), as SQLite's: the
 * claim runs a conversation's events one at a time in arrival order, each run's turn is written
 * with its answer, read back for the next run of the key, and forgotten `sessionTtlSeconds`
 * later.
 *
 * @module
 */
import type { StateStore } from "../mod.ts";
import { type Db, type PgCore, query } from "./_core.ts";
import { rowToTurn } from "../_rows.ts";

/** The most turns one read gives back, the newest: a budget of tokens keeps fewer anyway. */
const MAX_TURNS_READ = 200;

/**
 * What the claim's query adds for conversations: the candidate `e` has no conversation key, or
 * no other event of its key runs and none accepted before it is still queued. With several
 * gateways the check sees the earlier event queued until its claim commits, then running.
 */
export const SESSION_FREE = "(e.session_key IS NULL OR NOT EXISTS (SELECT 1 FROM events earlier " +
  "WHERE earlier.subscription = e.subscription AND earlier.session_key = e.session_key " +
  "AND earlier.status IN ('queued', 'running') " +
  "AND (earlier.status = 'running' OR earlier.seq < e.seq)))";

/**
 * The store's conversation method.
 * @param core the store
 * @param settings `ttlMs`: how long a turn is remembered, in ms
 * @returns the method, as `StateStore.sessionTurns` documents it, asynchronous
 */
export function sessionOps(
  core: PgCore,
  settings: { ttlMs: number },
): Pick<StateStore, "sessionTurns"> {
  return {
    sessionTurns: (subscription, sessionKey, nowMs) =>
      core.use(async () => {
        const rows = await query(
          core.sql,
          "SELECT event_id, prompt, answer, created_at FROM session_turns " +
            "WHERE subscription = $1 AND session_key = $2 AND created_at > $3 " +
            "ORDER BY seq DESC LIMIT $4",
          [subscription, sessionKey, nowMs - settings.ttlMs, MAX_TURNS_READ],
        );
        return [...rows].reverse().map(rowToTurn);
      }),
  };
}

/**
 * Writes the turn of an agent run of a conversation in the transaction that saves its answer,
 * so a crash keeps both or neither; an event without a conversation key writes nothing.
 * @param tx that transaction
 * @param turn `eventId`: the running event; `answer`: as stored; `atMs`: now, in ms
 */
export async function recordTurn(
  tx: Db,
  turn: { eventId: string; answer: string; atMs: number },
): Promise<void> {
  await query(
    tx,
    "INSERT INTO session_turns (subscription, session_key, event_id, prompt, answer, " +
      "created_at) SELECT subscription, session_key, id, prompt, $1, $2 FROM events " +
      "WHERE id = $3 AND mode = 'agent' AND session_key IS NOT NULL",
    [turn.answer, turn.atMs, turn.eventId],
  );
}

/**
 * Deletes turns written before `beforeMs`, oldest first, at most `maxRows`: the retention
 * pass's share for conversations.
 * @returns how many turns were deleted
 */
export async function forgetTurns(db: Db, beforeMs: number, maxRows: number): Promise<number> {
  const deleted = await query(
    db,
    "DELETE FROM session_turns WHERE seq IN (SELECT seq FROM session_turns " +
      "WHERE created_at <= $1 ORDER BY created_at LIMIT $2)",
    [beforeMs, maxRows],
  );
  return deleted.count;
}
