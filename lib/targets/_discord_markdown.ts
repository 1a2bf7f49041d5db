/**
 * Markdown as Discord shows it: as written, but for what Discord's Markdown lacks
 * (https://support.discord.com/hc/en-us/articles/210298617): tables become aligned columns in a
 * code block, headings below `###` bold lines, and a link with no text its bare address.
 * Everything else (headings, lists, quotes, code, links) Discord draws itself.
 *
 * @module
 */

import {
  childTokens,
  type Dialect,
  linkText,
  plainInline,
  tableText,
  type Token,
  type Tokens,
} from "./_markdown.ts";

/** Discord draws headings of one to three `#`. */
const DEEPEST_HEADING = 3;

function block(token: Token): string {
  if (token.type === "table") return "```\n" + tableText(token as Tokens.Table) + "\n```";
  if (token.type === "heading" && (token as Tokens.Heading).depth > DEEPEST_HEADING) {
    return `**${plainInline(token.tokens)}**`;
  }
  return withEmptyLinksShown(token, token.raw.replace(/\s+$/, ""));
}

/**
 * `source` (the Markdown of `token`) with each link that has no text, `[](https://…)`, as its
 * bare target, which Discord links by itself: it would show such a link as nothing to click. A
 * link whose source is not found as written (inside a nested list item) stays as it is.
 */
function withEmptyLinksShown(token: Token, source: string): string {
  let shown = "";
  let cursor = 0;
  const visit = (node: Token) => {
    if (node.type === "link" && linkText(node as Tokens.Link) === "") {
      const at = source.indexOf(node.raw, cursor);
      if (at !== -1) {
        shown += source.slice(cursor, at) + (node as Tokens.Link).href;
        cursor = at + node.raw.length;
      }
      return;
    }
    for (const child of childTokens(node)) visit(child);
  };
  visit(token);
  return shown + source.slice(cursor);
}

/** A web address as Discord links it by itself; a backslash inside one would change it. */
const BARE_URL = /\bhttps?:\/\/[^\s<]+/g;
/** What Discord's Markdown reads anywhere in a line: emphasis, code, spoilers, masked links. */
const INLINE_MARKUP = /[\\*_~`|[\]]/g;

/**
 * Text escaped so that Discord shows it as written: a backslash before each character its
 * Markdown reads (https://support.discord.com/hc/en-us/articles/210298617): a backslash, `*`, `_`,
 * `~`, a backtick, `|`, `[` and `]` anywhere but in a web address, and what makes a line a heading,
 * quote or list item (`#`, `>`, `-`, `+`, the `.` or `)` of `1.`). Discord shows a backslash
 * before punctuation as nothing.
 * @param text plain text, such as a direct-delivery message
 * @returns the text escaped, as long as it was or longer
 * @example
 * ```ts
 * escapeDiscordText("*URGENT* _x_"); // "\\*URGENT\\* \\_x\\_"
 * ```
 */
export function escapeDiscordText(text: string): string {
  let escaped = "";
  let from = 0;
  for (const url of text.matchAll(BARE_URL)) {
    escaped += text.slice(from, url.index).replace(INLINE_MARKUP, "\\$&") + url[0];
    from = url.index + url[0].length;
  }
  escaped += text.slice(from).replace(INLINE_MARKUP, "\\$&");
  return escaped.replace(/^([ \t]*)([#>+-])/gm, "$1\\$2").replace(/^([ \t]*\d+)([.)])/gm, "$1\\$2");
}

/** Discord's Markdown; its length is the text as sent, plain text escaped. */
export const discordMarkdown: Dialect = {
  block,
  length: (rendered) => rendered.length,
  escapePlain: escapeDiscordText,
};
