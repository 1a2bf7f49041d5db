/**
 * What a reader sees of a message the Slack or Discord fake received, as far as the tests need:
 * the markup each draws taken away, its escapes read. Telegram's is the fake's `shown`
 * (`telegram_entities.ts`).
 *
 * @module
 */

import type { ReceivedMessage } from "./chat_servers.ts";

/**
 * Slack: `*bold*`, `_italic_`, `~strike~` and `<url|text>` drawn unless the message was sent
 * with `mrkdwn: false`, then `&lt;`, `&gt;` and `&amp;` read.
 * https://api.slack.com/reference/surfaces/formatting
 * @param message a message the Slack fake accepted
 * @returns its text as a reader sees it
 */
export function slackShows(message: ReceivedMessage): string {
  let text = message.text;
  if (message.body.mrkdwn !== false) {
    text = text.replace(/<[^<>|]+\|([^<>]*)>/g, "$1").replace(/<([^<>]+)>/g, "$1")
      .replace(/(^|[^\w*_~])([*_~])(?=\S)(.*?\S)\2(?![\w*_~])/g, "$1$3");
  }
  return text.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&");
}

/** Stand-ins for characters Discord shows as escaped, out of the way of the markup. */
const HELD = /\u{F0000}(\d+)\u{F0001}/gu;

/**
 * Discord: `\` before punctuation read as that character; `**`, `*`, `__`, `_`, `~~`, `||` and
 * backtick pairs drawn; a heading's or quote's marker taken away, a bullet shown as `•`.
 * https://support.discord.com/hc/en-us/articles/210298617
 * @param message a message the Discord fake accepted
 * @returns its content as a reader sees it
 */
export function discordShows(message: ReceivedMessage): string {
  const held: string[] = [];
  const hold = (text: string) => `\u{F0000}${held.push(text) - 1}\u{F0001}`;
  // Escaped characters, then the text of masked links, then web addresses (which Discord links
  // whole, markup characters and all) are what they are.
  const drawn = message.text.replace(/\\([^\p{L}\p{N}\s])/gu, (_, char: string) => hold(char))
    .replace(/\[([^\]]*)\]\(https?:\/\/[^)\s]+\)/g, "$1")
    .replace(/https?:\/\/[^\s<]+/g, hold)
    .replace(/^([ \t]*)(?:#{1,3} |-# |>>> |> )/gm, "$1")
    .replace(/^([ \t]*)[-*] /gm, "$1• ")
    .replace(/(\*\*|__|~~|\|\||[*_`])(?=\S)([^]*?\S)\1/g, "$2");
  return drawn.replace(HELD, (_, index: string) => held[Number(index)]);
}
