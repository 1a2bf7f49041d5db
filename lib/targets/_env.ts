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
 * @param chatId the subscription's `deliver_extra.chat_id`, if any
 * @param options the environment, the home channel variable and the target's name
 * @returns the chat id, trimmed
 * @throws {TargetError} permanent when neither is set.
 */
export function chatOrHome(
  chatId: string | undefined,
  { env, home, target }: { env: Env; home: string; target: string },
): string {
  const chat = chatId?.trim() || envValue(env, [home]);
  if (chat === undefined) {
    throw new TargetError(
      `The ${target} target has no destination: set deliver_extra.chat_id (--deliver-chat-id) or ${home}`,
      { permanent: true },
    );
  }
  return chat;
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
  options: { chatId?: string; env: Env },
  rules: CheckRules,
): string[] {
  const chatId = options.chatId?.trim();
  if (rules.home !== undefined && !chatId && envValue(options.env, [rules.home]) === undefined) {
    throw new UsageError(
      `--deliver ${rules.target} needs a destination: pass --deliver-chat-id, or set ${rules.home} in the environment or .env`,
    );
  }
  // A chat id with placeholders is rendered per event; it can only be checked then.
  if (chatId && !chatId.includes("{") && rules.parse !== undefined) {
    try {
      rules.parse(chatId);
    } catch (error) {
      if (!(error instanceof TargetError)) throw error;
      throw new UsageError(`--deliver-chat-id ${JSON.stringify(chatId)}: ${error.message}`);
    }
  }
  if (rules.tokens.length > 0 && envValue(options.env, rules.tokens) === undefined) {
    return [
      `${rules.tokens.join(" or ")} is not set; the gateway needs it to deliver to ${rules.target}`,
    ];
  }
  return [];
}
