/**
 * The `slack` target: Web API `chat.postMessage` with a bot token, optionally as a thread
 * reply. Slack answers most failures with HTTP 200 and `ok: false`; its `error` code decides.
 * https://api.slack.com/methods/chat.postMessage
 *
 * Plain text is escaped as Slack asks for text it should not parse (`&`, `<`, `>` become
 * `&amp;`, `&lt;`, `&gt;`: https://api.slack.com/reference/surfaces/formatting#escaping), so a
 * payload cannot ping the channel with `<!channel>` or disguise a link as `<url|other text>`,
 * and sent with `mrkdwn: false` (https://api.slack.com/methods/chat.postMessage#arg_mrkdwn), so
 * its `*`, `_` and `~` show as written. Splitting counts the text before escaping; the escaped
 * part stays far below the 40,000 characters at which Slack truncates. Markdown is rendered as
 * `mrkdwn` (`_slack_mrkdwn.ts`), escaped the same way outside the links it writes.
 *
 * @module
 */

import { TargetError } from "../errors.ts";
import { asRecord } from "../subscriptions/payload.ts";
import { apiBase, chatOrHome, checkTarget, requireToken } from "./_env.ts";
import { postJson } from "./_http.ts";
import { type Failure, messageIdOf, notThePlatformsAnswer } from "./_platform_answers.ts";
import type { Target } from "./_target.ts";
import { escapeAmpLtGt } from "./_markdown.ts";
import { slackMrkdwn } from "./_slack_mrkdwn.ts";

/** Where a Slack message goes. */
export interface SlackDestination {
  /** The bot or API token (never shown in messages). */
  token: string;
  /** API base URL without a trailing `/`. */
  baseUrl: string;
  /** Channel id (`C0123456789`) or name. */
  channel: string;
  /** Parent message timestamp when replying in a thread. */
  threadTs?: string;
}

/** Slack error codes that a later attempt can get past; every other code is permanent. */
const RETRYABLE_ERRORS = new Set([
  "internal_error",
  "fatal_error",
  "service_unavailable",
  "request_timeout",
  "team_added_to_org",
]);

/**
 * Parses `<channel>` or `<channel>:<thread_ts>`.
 * @param value a channel id or name, with a thread's timestamp (`1712345678.123456`) after a
 *   colon
 * @returns the channel and the thread's timestamp, if any
 * @throws {TargetError} permanent for an empty channel or a thread that is not a timestamp.
 */
export function parseSlackChannel(value: string): { channel: string; threadTs?: string } {
  const [channel, threadTs] = value.split(":", 2).map((part) => part.trim());
  if (channel === "") throw new TargetError("a Slack channel is empty", { permanent: true });
  if (threadTs === undefined) return { channel };
  if (!/^\d+(\.\d+)?$/.test(threadTs)) {
    throw new TargetError(`a Slack thread is a message timestamp (thread_ts), got "${threadTs}"`, {
      permanent: true,
    });
  }
  return { channel, threadTs };
}

/**
 * Reads Slack's `ok` / `error` answer. An `ok: false` is classed by its `error` code; a body
 * without a boolean `ok` (a proxy's page) is retryable, as for every chat target.
 */
function inspect(body: unknown): Failure | undefined {
  const answer = asRecord(body);
  if (answer?.ok === true) return undefined;
  if (answer?.ok !== false) return notThePlatformsAnswer("a Slack Web API answer", body);
  const code = typeof answer.error === "string" ? answer.error : `"ok": false without an error`;
  if (code === "ratelimited") return { kind: "rate_limited" };
  return { kind: RETRYABLE_ERRORS.has(code) ? "retryable" : "permanent", detail: code };
}

/** Where a message goes when its subscription names no chat. */
const HOME_CHANNEL = "SLACK_HOME_CHANNEL";

/** Slack bot, `SLACK_BOT_TOKEN`, channel or `SLACK_HOME_CHANNEL`, 4,000 characters. */
export const slack: Target<SlackDestination> = {
  name: "slack",
  homeChannel: HOME_CHANNEL,
  maxChars: 4000,
  dialect: slackMrkdwn,
  needs: "SLACK_BOT_TOKEN",
  destination: "channel id (--deliver-chat-id) or SLACK_HOME_CHANNEL; <channel>:<thread_ts>",
  resolve(job, ctx) {
    const token = requireToken(ctx.env, ["SLACK_BOT_TOKEN"], "slack");
    const chat = chatOrHome(job.chatId, {
      env: ctx.env,
      home: HOME_CHANNEL,
      target: "slack",
    });
    const { channel, threadTs } = parseSlackChannel(chat);
    const baseUrl = apiBase(ctx.env, "SLACK_API_URL", "https://slack.com/api");
    return {
      label: threadTs === undefined ? channel : `${channel}:${threadTs}`,
      destination: { token, baseUrl, channel, threadTs },
    };
  },
  // The posted message is known by its `ts`, which a thread reply names as its `thread_ts`.
  async send({ token, baseUrl, channel, threadTs }, { text, formatted }, ctx) {
    const answer = await postJson(ctx, {
      platform: "Slack",
      action: `chat.postMessage to ${channel}`,
      url: `${baseUrl}/chat.postMessage`,
      headers: { Authorization: `Bearer ${token}` },
      body: {
        channel,
        text: formatted ? text : escapeAmpLtGt(text),
        // Plain text is not read as mrkdwn: `*bold*` in a payload shows its asterisks.
        ...(formatted ? {} : { mrkdwn: false }),
        ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
      },
      secret: token,
      inspect,
    });
    return { messageId: messageIdOf(asRecord(answer)?.ts) };
  },
  check(options) {
    return checkTarget(options, {
      target: "slack",
      tokens: ["SLACK_BOT_TOKEN"],
      home: HOME_CHANNEL,
      parse: parseSlackChannel,
    });
  },
};
