/**
 * Reading what targets need from the environment (tokens, home channels, API base URLs), with
 * the same wording at delivery time (a permanent {@link TargetError}) and at subscribe time (a
 * {@link UsageError} or a warning).
 *
 * @module
 */

import { TargetError, UsageError } from "../errors.ts";

/** Process env merged with `.env`. */
export type Env = Record<string, string | undefined>;

/**
 * The first of `names` that is set and not blank, trimmed.
 * @param env the environment to read
 * @param names variable names, in order of preference
 * @returns the value, or undefined when none is set
 */
export function envValue(env: Env, names: readonly string[]): string | undefined {
  for (const name of names) {
    const value = env[name]?.trim();
    if (value) return value;
  }
  return undefined;
}

/**
 * The token of a target.
 * @param env the environment to read
 * @param names the token's variables, in order of preference (`TELEGRAM_BOT_TOKEN`)
 * @param target the target's name, for the message (`telegram`)
 * @returns the token, trimmed
 * @throws {TargetError} permanent, naming the variable, when none of `names` is set.
 */
export function requireToken(env: Env, names: readonly string[], target: string): string {
  const token = envValue(env, names);
  if (token === undefined) {
    throw new TargetError(
      `The ${target} target needs ${names.join(" or ")}, which is not set (in the environment, ` +
        "or in .env when the gateway started: restart it after editing .env)",
      { permanent: true },
    );
  }
  return token;
}

/**
 * A platform's API base URL: the override variable when set, else `fallback`.
 * @param env the environment to read
 * @param name the override variable (`TELEGRAM_API_URL`), set by tests and self-hosted setups
 * @param fallback the platform's public URL
 * @returns the URL without a trailing `/`
 */
export function apiBase(env: Env, name: string, fallback: string): string {
  return (envValue(env, [name]) ?? fallback).replace(/\/+$/, "");
}

/**
 * The chat a chat target sends to: the job's chat id, else the home channel variable `home`.
 * A chat id that is only `:<thread>` (a `deliver_extra.thread` without a chat id, see
 * {@link chatWithThread}) names that thread in the home channel.
 * @param chatId the rendered `deliver_extra.chat_id` (with its `:<thread>`), if any
 * @param options the environment, the home channel variable and the target's name
 * @returns the chat id, trimmed, with its `:<thread>` if any
 * @throws {TargetError} permanent when neither is set.
 */
export function chatOrHome(
  chatId: string | undefined,
  { env, home, target }: { env: Env; home: string; target: string },
): string {
  const given = chatId?.trim();
  const homeChat = envValue(env, [home]);
  const chat = given?.startsWith(":") ? homeChat && homeChat + given : given || homeChat;
  if (chat === undefined) {
    throw new TargetError(
      `The ${target} target has no destination: set deliver_extra.chat_id (--deliver-chat-id) or ${home}`,
      { permanent: true },
    );
  }
  return chat;
}

/**
 * A chat id with a thread: `<chat>:<thread>`, the form each chat target parses (a Telegram
 * forum topic, a Slack `thread_ts`, a Discord thread). A thread replaces one the chat id had;
 * without a chat id it is `:<thread>`, the thread in the home channel ({@link chatOrHome}).
 * docs/targets.md#threads
 * @param chatId the chat id, if any
 * @param thread the thread; blank leaves the chat id as it is
 * @returns the chat id to deliver to
 * @example
 * ```ts
 * chatWithThread("-1001234567890", "42"); // "-1001234567890:42"
 * chatWithThread(undefined, "42"); // ":42"
 * ```
 */
export function chatWithThread(chatId: string | undefined, thread: string): string | undefined {
  if (thread.trim() === "") return chatId;
  const chat = chatId === undefined ? "" : chatId.split(":", 1)[0];
  return `${chat.trim()}:${thread.trim()}`;
}

/** What {@link checkTarget} needs to know about a target. */
export interface CheckRules {
  /** The `--deliver` value, for messages. */
  target: string;
  /** Token variables, any one of which is enough. */
  tokens: readonly string[];
  /** Home channel variable of a chat target; absent for targets that find their place elsewhere. */
  home?: string;
  /** Parses a literal chat id; throws a TargetError for a malformed one. */
  parse?: (chatId: string) => unknown;
}

/**
 * Subscribe-time checks shared by the targets: a destination must exist, a literal chat id must
 * parse, a missing token is only a warning (the gateway may have it in its own environment).
 *
 * @returns Warnings for the user.
 * @throws {UsageError} For a chat target with no chat id and no home channel, or a malformed id.
 */
export function checkTarget(
  options: { chatId?: string; thread?: string; env: Env },
  rules: CheckRules,
): string[] {
  const chatId = options.chatId?.trim();
  const home = rules.home === undefined ? undefined : envValue(options.env, [rules.home]);
  if (rules.home !== undefined && !chatId && home === undefined) {
    throw new UsageError(
      `--deliver ${rules.target} needs a destination: pass --deliver-chat-id, or set ${rules.home} in the environment or .env`,
    );
  }
  // A chat id with placeholders is rendered per event; it can only be checked then.
  if (chatId && !chatId.includes("{")) checkParses(chatId, "--deliver-chat-id", rules);
  const thread = options.thread?.trim();
  if (thread && !thread.includes("{") && !chatId?.includes("{")) {
    checkParses(chatWithThread(chatId || home, thread)!, "--deliver-thread", rules);
  }
  if (rules.tokens.length > 0 && envValue(options.env, rules.tokens) === undefined) {
    return [
      `${rules.tokens.join(" or ")} is not set; the gateway needs it to deliver to ${rules.target}`,
    ];
  }
  return [];
}

/** Refuses a literal chat id (with its thread) that `rules.parse` refuses, naming `flag`. */
function checkParses(chatId: string, flag: string, rules: CheckRules): void {
  if (rules.parse === undefined) return;
  try {
    rules.parse(chatId);
  } catch (error) {
    if (!(error instanceof TargetError)) throw error;
    throw new UsageError(`${flag} ${JSON.stringify(chatId)}: ${error.message}`);
  }
}
