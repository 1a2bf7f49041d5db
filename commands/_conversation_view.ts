/**
 * What `agent webhook show` prints of an event's conversation (docs/subscriptions.md#conversations):
 * its session key, and how many earlier turns its agent run was given, or will be.
 *
 * @module
 */
import { DEFAULT_SESSION_BUDGET_TOKENS, fitTurns } from "../lib/agents/mod.ts";
import { oneTerminalLine } from "../lib/log.ts";
import type { Lineage } from "../lib/state/mod.ts";

/**
 * How many earlier turns the event's latest run was given: those the store holds from before
 * its own turn that fit the route's budget, cut as the worker cuts them (`fitTurns`).
 * @param lineage the event's lineage, with its conversation
 * @returns null for an event of no conversation (or a lineage read without it); else the
 *   count, the turns held before the run, whether the run's own turn is held, and the budget
 *   in tokens
 */
export function conversationFacts(lineage: Lineage) {
  const { event, conversation } = lineage;
  if (event.sessionKey === undefined || conversation === undefined) return null;
  const budget = event.route.sessionBudget ?? DEFAULT_SESSION_BUDGET_TOKENS;
  const { earlierTurns, ownTurn } = conversation;
  const given = fitTurns(earlierTurns, budget).length;
  return { key: event.sessionKey, given, held: earlierTurns.length, ownTurn, budget };
}

/**
 * The "Conversation" section of an event's lineage, as lines; none for an event of no
 * conversation.
 * @param lineage the event's lineage
 * @returns the section's title and lines, or none
 */
export function conversationSection(lineage: Lineage): string[] {
  const { event } = lineage;
  if (event.sessionKey === undefined) return [];
  const key = `  session key ${oneTerminalLine(JSON.stringify(event.sessionKey))}`;
  const facts = conversationFacts(lineage);
  if (facts === null) return [`Conversation\n${key}`];
  const turns = (count: number) => `${count} earlier ${count === 1 ? "turn" : "turns"}`;
  const cut = facts.given < facts.held
    ? ` (of ${facts.held} held before it: the older did not fit)`
    : "";
  const running = event.status === "queued" || event.status === "running";
  const given = event.coalescedInto !== undefined
    ? `  its turn is that of the run it was folded into (agent webhook show ${event.coalescedInto})`
    : facts.ownTurn
    ? `  its run was given ${turns(facts.given)}${cut}, within ${facts.budget} tokens`
    : running
    ? `  its run will be given the turns held then: ${turns(facts.given)} now${cut}`
    : "  no turn of its run is held: it saved no answer, or its turn was forgotten (session_ttl)";
  return [`Conversation\n${key}\n${given}`];
}

/**
 * The conversation as `show --json` prints it.
 * @param lineage the event's lineage
 * @returns null for an event of no conversation; else `key`, `own_turn`, `turns_given` and
 *   `turns_held_before` (null when the lineage was read without its turns)
 */
export function conversationJson(lineage: Lineage) {
  const { event } = lineage;
  if (event.sessionKey === undefined) return null;
  const facts = conversationFacts(lineage);
  return {
    key: event.sessionKey,
    own_turn: facts?.ownTurn ?? null,
    turns_given: facts?.given ?? null,
    turns_held_before: facts?.held ?? null,
  };
}
