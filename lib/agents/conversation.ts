/**
 * The earlier turns of a conversation as an agent run is given them
 * (docs/subscriptions.md#conversations): the newest that fit a budget of tokens, oldest first,
 * and, for a `command` agent, the JSON file that holds them (docs/subscriptions.md#conversations).
 *
 * @module
 */
import { join } from "node:path";
import { AgentError, errorMessage } from "../errors.ts";

/** One earlier turn: the prompt of a run of the conversation and the answer it gave. */
export interface ConversationTurn {
  /** The event whose run it was. */
  eventId: string;
  /** The prompt it was given. */
  prompt: string;
  /** The answer it gave. */
  answer: string;
  /** When its run began, in ms since the epoch. */
  atMs: number;
}

/** The conversation an agent run belongs to. */
export interface AgentConversation {
  /** The rendered key: `octo/repo#12`. */
  key: string;
  /** The earlier turns the run is given, oldest first (already cut to the budget). */
  turns: ConversationTurn[];
}

/**
 * The tokens of earlier turns a run is given when the subscription sets no `session_budget`:
 * room for a few turns of a chat, well inside the context of the small models people run
 * locally (8k tokens), with the system prompt and the new prompt beside it.
 */
export const DEFAULT_SESSION_BUDGET_TOKENS = 4000;

/** Characters per token of the estimate: the dashboard's playground counts the same way. */
export const CHARS_PER_TOKEN = 4;

/**
 * Estimates the tokens of a text: one per {@link CHARS_PER_TOKEN} characters, rounded up. A rule
 * of thumb for English with the common tokenizers, not a tokenizer (docs/dashboard.md).
 * @param text any text
 * @returns the estimate, in tokens
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

/**
 * The newest turns whose prompts and answers fit `budgetTokens` together: the oldest are dropped
 * first, and a turn that does not fit ends the walk, so the turns kept are always the latest,
 * in a row.
 * @param turns the conversation's turns, oldest first
 * @param budgetTokens the most tokens they may take (estimated: {@link estimateTokens})
 * @returns the turns kept, oldest first
 * @example
 * ```ts
 * fitTurns(turns, 4000); // the last turns, at most about 16 000 characters in all
 * ```
 */
export function fitTurns<T extends Pick<ConversationTurn, "prompt" | "answer">>(
  turns: readonly T[],
  budgetTokens: number,
): T[] {
  let spent = 0;
  let first = turns.length;
  while (first > 0) {
    const turn = turns[first - 1];
    const cost = estimateTokens(turn.prompt) + estimateTokens(turn.answer);
    if (spent + cost > budgetTokens) break;
    spent += cost;
    first -= 1;
  }
  return turns.slice(first);
}

/**
 * The file a `command` agent reads its conversation from (`AGENT_SESSION_FILE`): JSON of the
 * shape docs/subscriptions.md#conversations documents, `{"key", "turns": [{"event_id", "prompt",
 * "answer", "at"}]}`, readable by this user only, in a folder of its own.
 * @param conversation the run's conversation
 * @returns the file's path, and a function that removes it (and its folder); call it once the
 *   program has exited
 * @throws AgentError retryable and `unavailable` when it cannot be written (a full disk): that
 *   holds for every run now, as a program that cannot start does
 */
export async function writeConversationFile(
  conversation: AgentConversation,
): Promise<{ path: string; remove: () => Promise<void> }> {
  try {
    return await writeFile(conversation);
  } catch (error) {
    throw new AgentError(
      `Cannot write the conversation's file for the agent command: ${errorMessage(error)}`,
      { unavailable: true, cause: error },
    );
  }
}

/** See {@link writeConversationFile}. */
async function writeFile(
  conversation: AgentConversation,
): Promise<{ path: string; remove: () => Promise<void> }> {
  const dir = await Deno.makeTempDir({ prefix: "agent-session-" });
  const remove = () => Deno.remove(dir, { recursive: true }).catch(() => {});
  const path = join(dir, "session.json");
  try {
    const body = {
      key: conversation.key,
      turns: conversation.turns.map((turn) => ({
        event_id: turn.eventId,
        prompt: turn.prompt,
        answer: turn.answer,
        at: new Date(turn.atMs).toISOString(),
      })),
    };
    await Deno.writeTextFile(path, JSON.stringify(body), { mode: 0o600 });
  } catch (error) {
    // No run will remove it: a full disk must not also fill the temporary folder with these.
    await remove();
    throw error;
  }
  return { path, remove };
}
