/**
 * Markdown as Telegram's HTML `parse_mode` shows it (https://core.telegram.org/bots/api#html-style):
 * only `<b> <i> <s> <code> <pre> <a href> <blockquote>` are written, `<`, `>` and `&` are escaped
 * everywhere else (and `"` in attributes), and Telegram's nesting rules are kept: nothing inside
 * `<code>` or `<pre>` (but the `<code class="language-…">` of a code block), no `<pre>` or
 * `<blockquote>` inside a blockquote. Headings become bold lines, lists bullet or number lines,
 * tables and thematic breaks text Telegram can show.
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

/** Escapes an attribute value: also `"`. */
function escapeAttribute(text: string): string {
  return escapeAmpLtGt(text).replaceAll('"', "&quot;");
}

/** Where an inline token sits: inside a link (no link in it), or inside any entity (no code). */
interface Inside {
  link: boolean;
  entity: boolean;
}

const TOP: Inside = { link: false, entity: false };

function inline(tokens: readonly Token[] | undefined, inside: Inside): string {
  return (tokens ?? []).map((token) => inlineToken(token, inside)).join("");
}

function inlineToken(token: Token, inside: Inside): string {
  const within = { ...inside, entity: true };
  switch (token.type) {
    case "text":
      return token.tokens
        ? inline(token.tokens, inside)
        : escapeAmpLtGt(decodeEntities(token.text));
    case "escape":
      return escapeAmpLtGt(token.text);
    case "strong":
      return `<b>${inline(token.tokens, within)}</b>`;
    case "em":
      return `<i>${inline(token.tokens, within)}</i>`;
    case "del":
      return `<s>${inline(token.tokens, within)}</s>`;
    case "codespan":
      // Telegram lets no entity hold a code entity.
      return inside.entity
        ? escapeAmpLtGt(token.text)
        : `<code>${escapeAmpLtGt(token.text)}</code>`;
    case "link":
    case "image":
      return link(token as Tokens.Link | Tokens.Image, inside);
    case "br":
      return "\n";
    default:
      return escapeAmpLtGt(token.raw);
  }
}

/**
 * A link the chat can open as `<a>`; any other shows its text and, after it, its target. A link
 * with no text shows its target as its text, rather than nothing to click.
 */
function link(token: Tokens.Link | Tokens.Image, inside: Inside): string {
  const target = escapeAmpLtGt(token.href);
  const empty = linkText(token) === "";
  const text = empty
    ? target
    : token.type === "image"
    ? escapeAmpLtGt(token.text)
    : inline(token.tokens, { link: true, entity: true });
  if (inside.link) return text;
  if (!isOpenableUrl(token.href)) return token.href && !empty ? `${text} (${target})` : text;
  return `<a href="${escapeAttribute(token.href)}">${text}</a>`;
}

/** A code block: `<pre>`, with its language as Telegram reads it, or as text in a quote. */
function code(token: Tokens.Code, quoted: boolean): string {
  const text = escapeAmpLtGt(token.text);
  if (quoted) return text;
  const language = /^[\w+#.-]{1,32}$/.test(token.lang ?? "") ? token.lang : undefined;
  return language === undefined
    ? `<pre>${text}</pre>`
    : `<pre><code class="language-${language}">${text}</code></pre>`;
}

/** One block, `quoted` inside a blockquote (which Telegram lets hold no `<pre>` or quote). */
function block(token: Token, depth: number, quoted: boolean): string {
  switch (token.type) {
    case "paragraph":
      return inline(token.tokens, TOP);
    case "text":
      return token.tokens ? inline(token.tokens, TOP) : escapeAmpLtGt(token.text);
    case "heading": {
      const text = inline(token.tokens, { link: false, entity: true });
      return text.trim() === "" ? "" : `<b>${text}</b>`;
    }
    case "code":
      return code(token as Tokens.Code, quoted);
    case "blockquote": {
      const inner = blocks(token.tokens ?? [], depth, true);
      // Telegram refuses a message with nothing to show: an empty quote is left out.
      return quoted || inner.trim() === "" ? inner : `<blockquote>${inner}</blockquote>`;
    }
    case "list":
      return list(token as Tokens.List, depth, quoted);
    case "table": {
      const text = escapeAmpLtGt(tableText(token as Tokens.Table));
      return quoted ? text : `<pre>${text}</pre>`;
    }
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

/**
 * The length Telegram counts: the text after entities parsing, that is without tags and with
 * each entity one character ("1-4096 characters after entities parsing",
 * https://core.telegram.org/bots/api#sendmessage).
 * @param html text this module rendered
 * @returns its length in UTF-16 code units
 */
export function telegramLength(html: string): number {
  return html.replace(/<[^>]*>/g, "").replace(/&(?:lt|gt|amp|quot);/g, "&").length;
}

/** Telegram's HTML `parse_mode`. */
export const telegramHtml: Dialect = {
  block: (token) => block(token, 0, false),
  length: telegramLength,
};
