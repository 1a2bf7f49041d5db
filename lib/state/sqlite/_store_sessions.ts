// deno-lint-ignore-file require-await -- async by StateStore's contract, synchronous inside
/**
 * Conversations in the SQLite store (docs/subscriptions.md#conversations): the turns of each
 * conversation key, written in the transaction that saves a run's answer, read back for the
 * next run of the same key, and forgotten `sessionTtlSeconds` after they were written.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { preparedOnFirstUse, type Row, type StoreCore } from "./_store_core.ts";
import { type StateStore, storableText } from "../mod.ts";
import { rowToTurn } from "../_rows.ts";

/** The most turns one read gives back, the newest: a budget of tokens keeps fewer anyway. */
export const MAX_TURNS_READ = 200;

/** The store's conversation methods. */
export type SessionOps = Pick<StateStore, "sessionTurns">;

const SQL = {
  // One statement, no read first: an event without a conversation key (most) inserts nothing.
  recordTurn: "INSERT INTO session_turns (subscription, session_key, event_id, prompt, answer, " +
    "created_at) SELECT subscription, session_key, id, coalesce(?, prompt), ?, updated_at " +
    "FROM events " +
    "WHERE id = ? AND mode = 'agent' AND session_key IS NOT NULL",
  // The newest first through session_turns_key, whose rowids are in the order written.
  turns: "SELECT event_id, prompt, answer, created_at FROM session_turns " +
    "WHERE subscription = ? AND session_key = ? AND created_at > ? ORDER BY rowid DESC LIMIT ?",
  forget: "DELETE FROM session_turns WHERE rowid IN (SELECT rowid FROM session_turns " +
    "INDEXED BY session_turns_created WHERE created_at <= ? ORDER BY created_at LIMIT ?)",
} as const;

/** Prepared on first use: a store of no conversation never reads one. */
const statements = preparedOnFirstUse(SQL);

/**
 * The store's conversation methods.
 * @param core the store
 * @param settings `ttlMs`: how long a turn is remembered, in ms
 * @returns the methods, as {@link StateStore} documents them
 */
export function sessionOps(core: StoreCore, settings: { ttlMs: number }): SessionOps {
  return {
    sessionTurns: async (subscription, sessionKey, nowMs) =>
      core.use(() => {
        const rows = statements(core.db).turns.all(
          subscription,
          sessionKey,
          nowMs - settings.ttlMs,
          MAX_TURNS_READ,
        ) as Row[];
        return rows.reverse().map(rowToTurn);
      }),
  };
}

/**
 * Writes the turn of an agent run of a conversation: the event's prompt and `answer`. Called in
 * the transaction that saves the answer, so a crash keeps both or neither: the run that is done
 * again after a crash adds the turn once. An event without a conversation key writes nothing.
 * The turn is dated by the event's last change, which is its claim when this runs before the
 * answer is saved: the worker's clock, not the store's.
 * @param core the store, in a transaction
 * @param turn `eventId`: the running event; `answer`: as stored; `prompt`: what the run was
 *   given, when not the event's own prompt
 */
export function recordTurn(
  core: StoreCore,
  turn: { eventId: string; answer: string; prompt?: string },
): void {
  const prompt = turn.prompt === undefined ? null : storableText(turn.prompt);
  statements(core.db).recordTurn.run(prompt, turn.answer, turn.eventId);
}

/**
 * Deletes turns written before `beforeMs`, oldest first, at most `maxRows`: the retention
 * pass's share for conversations.
 * @param db the database, in the caller's transaction
 * @returns how many turns were deleted
 */
export function forgetTurns(db: DatabaseSync, beforeMs: number, maxRows: number): number {
  return Number(statements(db).forget.run(beforeMs, maxRows).changes);
}
