/**
 * The `telegram` target: Bot API `sendMessage`, optionally into a forum topic. Plain text goes
 * without `parse_mode`; Markdown is rendered for the HTML `parse_mode` (`_telegram_html.ts`), and
 * a part Telegram refuses to parse ("can't parse entities") is sent again as plain text, so a
 * formatting slip never loses the message.
 * https://core.telegram.org/bots/api#sendmessage
 *
 * @module
 */

import { TargetError } from "../errors.ts";
import { asRecord } from "../subscriptions/payload.ts";
import { apiBase, chatOrHome, checkTarget, requireToken } from "./_env.ts";
import { postJson } from "./_http.ts";
import {
  describeError,
  type Failure,
  messageIdOf,
  notThePlatformsAnswer,
  retryAfter,
} from "./_platform_answers.ts";
import type { SendContext, SentMessage, Target } from "./_target.ts";
import { telegramHtml } from "./_telegram_html.ts";

/** Where a Telegram message goes. */
export interface TelegramDestination {
  /** The bot or API token (never shown in messages). */
  token: string;
  /** API base URL without a trailing `/`. */
  baseUrl: string;
  /** Numeric chat id (`-1001234567890`) or `@channelusername`. */
  chatId: string;
  /** Forum topic (`message_thread_id`). */
  threadId?: number;
}

/**
 * A chat Telegram can address: a numeric id (a user; negative for a group, `-100…` for a channel
 * or supergroup), or a public channel's `@username` of 5 to 32 letters, digits and underscores.
 * https://core.telegram.org/bots/api#sendmessage (`chat_id`)
 */
const TELEGRAM_CHAT = /^(-?[1-9]\d{0,19}|@[A-Za-z0-9_]{5,32})$/;

/**
 * Parses `<chat>` or `<chat>:<thread>`.
 * @param value a chat id (`-100123`, `@channel`), with a forum topic after a colon
 * @returns the chat id and the topic, both trimmed
 * @throws {TargetError} permanent when the chat is neither a numeric id nor an `@username`, or
 *   the thread is not a positive integer.
 */
export function parseTelegramChat(value: string): { chatId: string; threadId?: number } {
  const [chatId, thread] = value.split(":", 2).map((part) => part.trim());
  if (!TELEGRAM_CHAT.test(chatId)) {
    throw new TargetError(
      `a Telegram chat is a number (-100… for a channel or supergroup) or @channelusername, got ${
        JSON.stringify(chatId)
      }`,
      { permanent: true },
    );
  }
  if (thread === undefined) return { chatId };
  if (!/^[1-9]\d*$/.test(thread)) {
    throw new TargetError(`a Telegram topic must be a message thread id, got "${thread}"`, {
      permanent: true,
    });
  }
  return { chatId, threadId: Number(thread) };
}

/**
 * Reads a 2xx answer: only `{"ok": true, ...}` means Telegram took the message. An `ok: false`
 * is classed by its `error_code` (429 waits, 5xx retries, others are permanent); any other 2xx
 * body (a proxy's page) is retryable, since the message was probably not sent.
 * https://core.telegram.org/bots/api#making-requests
 */
function inspect(body: unknown): Failure | undefined {
  const answer = asRecord(body);
  if (answer?.ok === true) return undefined;
  if (answer?.ok !== false) return notThePlatformsAnswer("a Bot API answer", body);
  const code = typeof answer.error_code === "number" ? answer.error_code : 0;
  if (code === 429) {
    return { kind: "rate_limited", retryAfterSeconds: retryAfter(new Headers(), body) };
  }
  const detail = describeError(body) || `"ok": false, error_code ${code || "missing"}`;
  return { kind: code >= 500 ? "retryable" : "permanent", detail };
}

/** Where a message goes when its subscription names no chat. */
const HOME_CHANNEL = "TELEGRAM_HOME_CHANNEL";

/**
 * One `sendMessage`: plain text, or HTML with `parseMode`.
 * @returns the sent Message's `message_id`
 */
async function sendMessage(
  destination: TelegramDestination,
  text: string,
  { ctx, parseMode }: { ctx: SendContext; parseMode?: "HTML" },
): Promise<SentMessage> {
  const { token, baseUrl, chatId, threadId } = destination;
  const answer = await postJson(ctx, {
    platform: "Telegram",
    action: `sendMessage to chat ${chatId}`,
    url: `${baseUrl}/bot${token}/sendMessage`,
    headers: {},
    body: {
      chat_id: chatId,
      text,
      ...(parseMode === undefined ? {} : { parse_mode: parseMode }),
      ...(threadId === undefined ? {} : { message_thread_id: threadId }),
    },
    secret: token,
    inspect,
  });
  return { messageId: messageIdOf(asRecord(asRecord(answer)?.result)?.message_id) };
}

/**
 * Whether Telegram refused a message for its formatting: HTTP 400 "Bad Request: can't parse
 * entities: ..." (https://core.telegram.org/bots/api#formatting-options).
 */
function refusedFormatting(error: unknown): error is TargetError {
  return error instanceof TargetError && error.status === 400 &&
    /can't parse entities/i.test(error.message);
}

/** Telegram Bot API, `TELEGRAM_BOT_TOKEN`, chat id or `TELEGRAM_HOME_CHANNEL`, 4,096 characters. */
export const telegram: Target<TelegramDestination> = {
  name: "telegram",
  homeChannel: HOME_CHANNEL,
  maxChars: 4096,
  dialect: telegramHtml,
  needs: "TELEGRAM_BOT_TOKEN",
  destination: "--deliver-chat-id or TELEGRAM_HOME_CHANNEL; <chat>:<thread> for a forum topic",
  resolve(job, ctx) {
    const token = requireToken(ctx.env, ["TELEGRAM_BOT_TOKEN"], "telegram");
    const chat = chatOrHome(job.chatId, {
      env: ctx.env,
      home: HOME_CHANNEL,
      target: "telegram",
    });
    const { chatId, threadId } = parseTelegramChat(chat);
    const baseUrl = apiBase(ctx.env, "TELEGRAM_API_URL", "https://api.telegram.org");
    return {
      label: threadId === undefined ? chatId : `${chatId}:${threadId}`,
      destination: { token, baseUrl, chatId, threadId },
    };
  },
  async send(destination, part, ctx) {
    if (!part.formatted) return await sendMessage(destination, part.text, { ctx });
    try {
      return await sendMessage(destination, part.text, { ctx, parseMode: "HTML" });
    } catch (error) {
      if (!refusedFormatting(error)) throw error;
      ctx.log("telegram refused the formatting; sending the part as plain text", {
        chat: destination.chatId,
        error: error.message,
      });
      return await sendMessage(destination, part.plain, { ctx });
    }
  },
  check(options) {
    return checkTarget(options, {
      target: "telegram",
      tokens: ["TELEGRAM_BOT_TOKEN"],
      home: HOME_CHANNEL,
      parse: parseTelegramChat,
    });
  },
};
