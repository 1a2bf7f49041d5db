/**
 * An event's whole lineage in the PostgreSQL store, as SQLite's reads it: the event, its
 * attempts and parts, the events folded into its agent run, and its conversation's turns, in one
 * read-only snapshot so that a gateway committing meanwhile is seen by all of it or none.
 *
 * @module
 */
import type { Lineage, StoredEvent } from "../mod.ts";
import { type Db, findEvent, query } from "./_core.ts";
import { rowToAttempt, rowToEvent, rowToPart } from "../_rows.ts";

/** The most earlier turns a lineage shows, the newest, as SQLite's. */
const MAX_TURNS_SHOWN = 200;

/**
 * See `StateStore.lineage`.
 * @param tx a read-only transaction (repeatable read)
 * @param eventId the event's id or a prefix of it
 * @returns the lineage; null when no event matches
 * @throws NotFoundError when the prefix matches several events
 */
export async function readLineage(tx: Db, eventId: string): Promise<Lineage | null> {
  const event = await findEvent(tx, eventId);
  if (event === null) return null;
  const attempts = await query(tx, "SELECT * FROM attempts WHERE event_id = $1 ORDER BY seq", [
    event.id,
  ]);
  const parts = await query(tx, "SELECT * FROM parts WHERE event_id = $1 ORDER BY seq", [
    event.id,
  ]);
  const folded = await query(
    tx,
    "SELECT * FROM events WHERE coalesced_into = $1 ORDER BY seq",
    [event.id],
  );
  return {
    event,
    attempts: attempts.map(rowToAttempt),
    parts: parts.map(rowToPart),
    folded: folded.map(rowToEvent),
    ...(event.sessionKey === undefined
      ? {}
      : { conversation: await conversation(tx, event, event.sessionKey) }),
  };
}

/** See `Lineage.conversation`: the turns before the event's latest own one. */
async function conversation(
  tx: Db,
  event: StoredEvent,
  sessionKey: string,
): Promise<NonNullable<Lineage["conversation"]>> {
  const { subscription } = event;
  const [row] = await query(
    tx,
    "SELECT max(seq) AS own FROM session_turns " +
      "WHERE subscription = $1 AND session_key = $2 AND event_id = $3",
    [subscription, sessionKey, event.id],
  );
  const own = row?.own === null || row?.own === undefined ? null : Number(row.own);
  const rows = await query(
    tx,
    "SELECT event_id, prompt, answer, created_at FROM session_turns " +
      "WHERE subscription = $1 AND session_key = $2 AND seq < $3 ORDER BY seq DESC LIMIT $4",
    [subscription, sessionKey, own ?? Number.MAX_SAFE_INTEGER, MAX_TURNS_SHOWN],
  );
  const earlierTurns = [...rows].reverse().map((turn) => ({
    eventId: String(turn.event_id),
    prompt: String(turn.prompt),
    answer: String(turn.answer),
    atMs: Number(turn.created_at),
  }));
  return { earlierTurns, ownTurn: own !== null };
}
