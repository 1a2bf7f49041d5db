/**
 * The conversation an agent run is given (docs/subscriptions.md#conversations): the earlier
 * turns of the event's key, as the store remembers them now, cut to the route's budget. The
 * claim has made sure no other run of the key is under way, so these are all the turns before
 * this one; a replay gets the conversation as it is at its run, its own earlier turn included.
 *
 * @module
 */
import { type AgentConversation, DEFAULT_SESSION_BUDGET_TOKENS, fitTurns } from "../agents/mod.ts";
import type { StoredEvent } from "../state/mod.ts";
import type { WorkerCore } from "./_core.ts";

/**
 * The conversation of an event about to run.
 * @param worker the worker: its store and clock
 * @param event the claimed event
 * @returns its key and the newest turns within `route.sessionBudget` tokens (@default
 *   {@link DEFAULT_SESSION_BUDGET_TOKENS}), oldest first; undefined for an event of no
 *   conversation
 * @throws StoreUnavailableError when the store cannot be read: the attempt fails, and is retried
 */
export async function conversationFor(
  worker: WorkerCore,
  event: StoredEvent,
): Promise<AgentConversation | undefined> {
  if (event.sessionKey === undefined) return undefined;
  const { store, now } = worker.deps;
  const turns = await store.sessionTurns(event.subscription, event.sessionKey, now());
  const budget = event.route.sessionBudget ?? DEFAULT_SESSION_BUDGET_TOKENS;
  return { key: event.sessionKey, turns: fitTurns(turns, budget) };
}
