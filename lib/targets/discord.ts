/**
 * The `discord` target: `POST /channels/{channel.id}/messages` with a bot token. Mentions in the
 * text are not resolved (`allowed_mentions.parse = []`), so a payload cannot ping `@everyone`.
 * Markdown goes as written, but for what Discord does not draw; plain text goes with its Markdown
 * characters escaped, so it shows as written (`_discord_markdown.ts`).
 * https://discord.com/developers/docs/resources/message#create-message
 *
 * @module
 */

import { TargetError } from "../errors.ts";
import { apiBase, chatOrHome, checkTarget, requireToken } from "./_env.ts";
import { postJson } from "./_http.ts";
import { createdWithId, messageIdOf } from "./_platform_answers.ts";
import { asRecord } from "../subscriptions/payload.ts";
import { discordMarkdown } from "./_discord_markdown.ts";
import type { Target } from "./_target.ts";

/** Where a Discord message goes. */
export interface DiscordDestination {
  /** The bot or API token (never shown in messages). */
  token: string;
  /** API base URL without a trailing `/`. */
  baseUrl: string;
  /** Channel (or thread) snowflake id. */
  channelId: string;
}

/**
 * Parses `<channel>` or `<channel>:<thread>` (snowflakes: digits only) into the channel a
 * message is posted to. A Discord thread is a channel of its own, so a message for a thread is
 * posted to the thread's id; the parent channel is kept only for the label.
 * https://discord.com/developers/docs/topics/threads
 * @param value the channel id as configured, with a thread id after a colon
 * @returns the id to post to: the thread's when there is one, else the channel's
 * @throws {TargetError} permanent for anything else.
 */
export function parseDiscordChannel(value: string): string {
  const [channel, thread] = value.split(":", 2).map((part) => part.trim());
  for (const [what, id] of [["channel", channel], ["thread", thread]]) {
    if (id !== undefined && !/^\d+$/.test(id)) {
      throw new TargetError(`a Discord ${what} id is a number (snowflake), got "${id}"`, {
        permanent: true,
      });
    }
  }
  return thread ?? channel;
}

/**
 * `User-Agent` of the form Discord requires: `DiscordBot ($url, $versionNumber)`.
 * https://discord.com/developers/docs/reference#user-agent
 */
const DISCORD_USER_AGENT = "DiscordBot (agent-gateway, 0.1.0)";

/**
 * Reads a 2xx answer: Discord answers a created message with the message object, whose `id` is
 * a string; anything else (a proxy's login page) means nothing was sent, and is retryable.
 * https://discord.com/developers/docs/resources/message#message-object
 */
const inspect = createdWithId("a Discord message", "string");

/** Where a message goes when its subscription names no chat. */
const HOME_CHANNEL = "DISCORD_HOME_CHANNEL";

/** Discord bot, `DISCORD_BOT_TOKEN`, channel id or `DISCORD_HOME_CHANNEL`, 2,000 characters. */
export const discord: Target<DiscordDestination> = {
  name: "discord",
  homeChannel: HOME_CHANNEL,
  maxChars: 2000,
  dialect: discordMarkdown,
  needs: "DISCORD_BOT_TOKEN",
  destination: "channel id (--deliver-chat-id) or DISCORD_HOME_CHANNEL; <channel>:<thread>",
  resolve(job, ctx) {
    const token = requireToken(ctx.env, ["DISCORD_BOT_TOKEN"], "discord");
    const chat = chatOrHome(job.chatId, { env: ctx.env, home: HOME_CHANNEL, target: "discord" });
    const channelId = parseDiscordChannel(chat);
    const baseUrl = apiBase(ctx.env, "DISCORD_API_URL", "https://discord.com/api/v10");
    return { label: chat.trim(), destination: { token, baseUrl, channelId } };
  },
  async send({ token, baseUrl, channelId }, { text }, ctx) {
    const answer = await postJson(ctx, {
      platform: "Discord",
      action: `message to channel ${channelId}`,
      url: `${baseUrl}/channels/${channelId}/messages`,
      headers: { Authorization: `Bot ${token}`, "User-Agent": DISCORD_USER_AGENT },
      body: { content: text, allowed_mentions: { parse: [] } },
      secret: token,
      inspect,
    });
    return { messageId: messageIdOf(asRecord(answer)?.id) };
  },
  check(options) {
    return checkTarget(options, {
      target: "discord",
      tokens: ["DISCORD_BOT_TOKEN"],
      home: HOME_CHANNEL,
      parse: parseDiscordChannel,
    });
  },
};
