/**
 * Markdown as Slack's `mrkdwn` shows it (https://api.slack.com/reference/surfaces/formatting):
 * `*bold*`, `_italic_`, `~strike~`, `` `code` ``, ```` ``` ```` blocks, `> ` quotes and
 * `<url|text>` links, with `&`, `<` and `>` escaped everywhere else, so a payload's `<!channel>`
 * shows as written. Headings become bold lines, lists bullet or number lines, tables aligned
 * columns in a code block: mrkdwn has none of them.
 *
 * @module
 */

import {
  decodeEntities,
  type Dialect,
  escapeAmpLtGt,
  isOpenableUrl,
  linkText,
  renderBlocks,
  renderList,
  RULE,
  tableText,
  type Token,
  type Tokens,
} from "./_markdown.ts";

function inline(tokens: readonly Token[] | undefined): string {
  return (tokens ?? []).map(inlineToken).join("");
}

function inlineToken(token: Token): string {
  switch (token.type) {
    case "text":
      return token.tokens ? inline(token.tokens) : escapeAmpLtGt(decodeEntities(token.text));
    case "escape":
      return escapeAmpLtGt(token.text);
    case "strong":
      return `*${inline(token.tokens)}*`;
    case "em":
      return `_${inline(token.tokens)}_`;
    case "del":
      return `~${inline(token.tokens)}~`;
    case "codespan":
      return `\`${escapeAmpLtGt(token.text)}\``;
    case "link":
    case "image":
      return link(token as Tokens.Link | Tokens.Image);
    case "br":
      return "\n";
    default:
      return escapeAmpLtGt(token.raw);
  }
}

/**
 * `<url|text>`, or `<url>` when the text is the URL or there is none; a link Slack cannot open
 * shows its text and its target, or only its target. Slack shows a link's text as written, so it is the plain text, and a `|` in the
 * URL would end it early.
 */
function link(token: Tokens.Link | Tokens.Image): string {
  const text = linkText(token);
  if (!isOpenableUrl(token.href)) {
    const target = token.href && text !== "" ? ` (${token.href})` : token.href;
    return escapeAmpLtGt(text + target);
  }
  const url = escapeAmpLtGt(token.href.replaceAll("|", "%7C"));
  return text === "" || text === token.href ? `<${url}>` : `<${url}|${escapeAmpLtGt(text)}>`;
}

/** One block, `quoted` inside a quote (Slack quotes do not nest). */
function block(token: Token, depth: number, quoted: boolean): string {
  switch (token.type) {
    case "paragraph":
      return inline(token.tokens);
    case "text":
      return token.tokens ? inline(token.tokens) : escapeAmpLtGt(token.text);
    case "heading":
      return `*${inline(token.tokens)}*`;
    case "code":
      return "```\n" + escapeAmpLtGt(token.text) + "\n```";
    case "blockquote": {
      const inner = blocks(token.tokens ?? [], depth, true);
      if (quoted || inner.trim() === "") return inner;
      return inner.split("\n").map((line) => `> ${line}`).join("\n");
    }
    case "list":
      return list(token as Tokens.List, depth, quoted);
    case "table":
      return "```\n" + escapeAmpLtGt(tableText(token as Tokens.Table)) + "\n```";
    case "hr":
      return RULE;
    case "checkbox":
    case "space":
    case "def":
      return "";
    default:
      return escapeAmpLtGt(token.raw.trimEnd());
  }
}

function blocks(tokens: readonly Token[], depth: number, quoted: boolean): string {
  return renderBlocks(tokens, { depth, quoted, block });
}

function list(token: Tokens.List, depth: number, quoted: boolean): string {
  return renderList(token, { depth, quoted, block });
}

/** Slack's `mrkdwn`; its length is the text as sent. */
export const slackMrkdwn: Dialect = {
  block: (token) => block(token, 0, false),
  length: (rendered) => rendered.length,
};
