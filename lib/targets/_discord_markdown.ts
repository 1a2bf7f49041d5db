/**
 * Markdown as Discord shows it: as written, but for what Discord's Markdown lacks
 * (https://support.discord.com/hc/en-us/articles/210298617): tables become aligned columns in a
 * code block, and headings below `###` bold lines. Everything else (headings, lists, quotes,
 * code, links) Discord draws itself.
 *
 * @module
 */

import { type Dialect, plainInline, tableText, type Token, type Tokens } from "./_markdown.ts";

/** Discord draws headings of one to three `#`. */
const DEEPEST_HEADING = 3;

function block(token: Token): string {
  if (token.type === "table") return "```\n" + tableText(token as Tokens.Table) + "\n```";
  if (token.type === "heading" && (token as Tokens.Heading).depth > DEEPEST_HEADING) {
    return `**${plainInline(token.tokens)}**`;
  }
  return token.raw.replace(/\s+$/, "");
}

/** Discord's Markdown; its length is the text as sent. */
export const discordMarkdown: Dialect = {
  block,
  length: (rendered) => rendered.length,
};
