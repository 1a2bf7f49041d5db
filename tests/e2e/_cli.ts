/**
 * What several end-to-end tests ask the CLI the same way: the subscription `ci` (issues, prompt
 * `Delivery {__delivery_id__}`, to a Telegram chat) and the events as `webhook events --json`
 * prints them.
 *
 * @module
 */
import assert from "node:assert/strict";
import { runCli } from "../_helpers.ts";

/** Options of {@link subscribeCi}. */
export interface SubscribeCiOptions {
  /** The subscription's secret. */
  secret: string;
  /** The Telegram chat the messages go to. */
  chat: string;
  /** More `webhook subscribe` arguments, such as `--rate-limit 10`. */
  extra?: string[];
  /** Removes what the caller built, when the subscription fails. */
  dispose: () => Promise<void>;
}

/**
 * Runs `webhook subscribe ci` for `issues`, with the prompt `Delivery {__delivery_id__}`, to a
 * Telegram chat.
 * @param env the environment of the home's commands
 * @throws AssertionError when the command fails, after `options.dispose` ran
 */
export async function subscribeCi(
  env: Record<string, string>,
  options: SubscribeCiOptions,
): Promise<void> {
  const sub = await runCli([
    "webhook",
    "subscribe",
    "ci",
    "--events",
    "issues",
    "--prompt",
    "Delivery {__delivery_id__}",
    "--deliver",
    "telegram",
    "--deliver-chat-id",
    options.chat,
    "--secret",
    options.secret,
    ...(options.extra ?? []),
  ], env);
  if (sub.code !== 0) {
    await options.dispose();
    assert.fail(`subscribe failed: ${sub.stderr}`);
  }
}

/**
 * `agent webhook events --json`, newest first, as a user on the home reads them.
 * @param env the environment of the home's commands
 * @param args more arguments, such as `--limit 1000`
 * @returns the rows, typed by the caller as the fields it reads
 * @throws AssertionError when the command fails
 */
export async function webhookEvents<T>(
  env: Record<string, string>,
  args: string[] = [],
): Promise<T[]> {
  const result = await runCli(["webhook", "events", "--json", ...args], env);
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout) as T[];
}
