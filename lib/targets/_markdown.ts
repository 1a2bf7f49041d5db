/**
 * What the per-platform Markdown renderers share: the lexer (marked, GFM), the shape of a
 * {@link Dialect}, and the pieces every chat renders alike: plain text of inline tokens, tables as
 * aligned columns, list markers and the links a chat can open.
 *
 * marked's lexer gives each token its source text (`raw`), so an answer can be cut between
 * blocks and each part rendered on its own (`_format.ts`); its GFM mode reads tables, task lists
 * and strikethrough as agents write them. https://marked.js.org/using_pro#lexer
 *
 * @module
 */

import { Lexer, type Token, type Tokens } from "marked";
import type { Span } from "./split.ts";

export type { Token, Tokens };

/** How one platform shows Markdown: its rendering of a top-level block, and its length rule. */
export interface Dialect {
  /**
   * Renders one top-level block (a marked token) as the platform shows formatted text; blocks
   * are joined with a blank line.
   */
  block(token: Token): string;
  /** How much of the platform's limit `rendered` takes, in UTF-16 code units. */
  length(rendered: string): number;
  /**
   * Plain text written so that the platform shows it as written, when it draws Markdown in any
   * message (Discord); the limit counts what it returns. Absent: plain text is sent as it is.
   */
  escapePlain?(text: string): string;
}

/**
 * The top-level blocks of `markdown`, without the blank space between them and without link
 * reference definitions (marked has already resolved the links that use them).
 * @param markdown the text, as the agent wrote it
 * @returns the blocks in order, each with its source in `raw`
 */
export function lexBlocks(markdown: string): Token[] {
  return Lexer.lex(markdown, { gfm: true }).filter((token) =>
    token.type !== "space" && token.type !== "def"
  );
}

/**
 * Escapes `&`, `<` and `>` as `&amp;`, `&lt;` and `&gt;`, so that the text shows as written where
 * they are markup: in Telegram's HTML `parse_mode` (https://core.telegram.org/bots/api#html-style)
 * and in Slack's text (https://api.slack.com/reference/surfaces/formatting#escaping).
 * @param text any text
 * @returns the text escaped
 * @example
 * ```ts
 * escapeAmpLtGt("<!channel> & a<b"); // "&lt;!channel&gt; &amp; a&lt;b"
 * ```
 */
export function escapeAmpLtGt(text: string): string {
  return text.replace(/[&<>]/g, (char) => char === "&" ? "&amp;" : char === "<" ? "&lt;" : "&gt;");
}

/** The entities CommonMark decodes in text that agents write most: named basics and numbers. */
const ENTITY = /&(amp|lt|gt|quot|apos|nbsp|#\d{1,7}|#x[\da-f]{1,6});/gi;
const NAMED: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: "\u00a0",
};

/**
 * Text as a reader should see it: `&amp;`, `&lt;`, `&#39;` and the like decoded (marked keeps
 * them as written). Others stay as written.
 * @param text a text token's text
 * @returns the decoded text
 */
export function decodeEntities(text: string): string {
  return text.replace(ENTITY, (entity, name: string) => {
    const lower = name.toLowerCase();
    if (lower in NAMED) return NAMED[lower];
    const code = lower.startsWith("#x") ? parseInt(lower.slice(2), 16) : parseInt(lower.slice(1));
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : entity;
  });
}

/**
 * The plain text of inline tokens: formatting dropped, links as their text, images as their
 * description (either as its target when it has none). Used where a platform allows no formatting (a table cell, a link's text).
 * @param tokens inline tokens
 * @returns the text
 */
export function plainInline(tokens: readonly Token[] | undefined): string {
  return (tokens ?? []).map((token): string => {
    switch (token.type) {
      case "text":
        return token.tokens ? plainInline(token.tokens) : decodeEntities(token.text);
      case "escape":
      case "codespan":
        return token.text;
      case "link":
      case "image":
        return linkText(token as Tokens.Link | Tokens.Image) || token.href;
      case "br":
        return " ";
      case "html":
        return token.raw;
      default:
        return "tokens" in token && token.tokens ? plainInline(token.tokens) : token.raw;
    }
  }).join("");
}

/**
 * The plain text of a link or image: its text, or its description, trimmed; "" when it has none
 * (`[](https://…)`), which a chat would show as nothing to click, so the renderers show the
 * target instead.
 * @param token a link or image token
 */
export function linkText(token: Tokens.Link | Tokens.Image): string {
  return (token.type === "image" ? token.text : plainInline(token.tokens)).trim();
}

/**
 * A table as lines of aligned columns (`a | b`), the header underlined, for a monospaced block:
 * no chat platform draws Markdown tables.
 * @param table the table token
 * @returns the lines, without a trailing newline
 */
export function tableText(table: Tokens.Table): string {
  const rows = [table.header, ...table.rows].map((row) =>
    row.map((cell) => plainInline(cell.tokens))
  );
  const widths = table.header.map((_, column) =>
    Math.max(...rows.map((row) => (row[column] ?? "").length))
  );
  const line = (row: string[]) =>
    widths.map((width, column) => pad(row[column] ?? "", width, table.align[column])).join(" | ")
      .trimEnd();
  const rule = widths.map((width) => "-".repeat(width)).join("-+-");
  return [line(rows[0]), rule, ...rows.slice(1).map(line)].join("\n");
}

function pad(text: string, width: number, align: string | null): string {
  const room = width - text.length;
  if (align === "right") return " ".repeat(room) + text;
  if (align === "center") {
    const left = Math.floor(room / 2);
    return " ".repeat(left) + text + " ".repeat(room - left);
  }
  return text + " ".repeat(room);
}

/**
 * The marker of a list item: its number in an ordered list, a checkbox for a task, else a
 * bullet that changes with the depth (`•`, `◦`, `▪`).
 * @param list the list
 * @param index the item's index in the list
 * @param depth how deep the list is nested, 0 at the top
 * @returns the marker, without the space after it
 */
export function listMarker(list: Tokens.List, index: number, depth: number): string {
  const item = list.items[index];
  if (item.task) return item.checked ? "☑" : "☐";
  if (list.ordered) return `${(Number(list.start) || 1) + index}.`;
  return ["•", "◦", "▪"][Math.min(depth, 2)];
}

/** Renders one block token for a platform, `depth` lists deep, inside a quote or not. */
export type BlockRenderer = (token: Token, depth: number, quoted: boolean) => string;

/**
 * Block tokens rendered one after the other, one line apart; a token that renders to nothing
 * (a blank line, a link definition) leaves no empty line.
 * @param tokens the blocks
 * @param context `depth` of list nesting, whether inside a quote, and the platform's `block`
 */
export function renderBlocks(
  tokens: readonly Token[],
  { depth, quoted, block }: { depth: number; quoted: boolean; block: BlockRenderer },
): string {
  return tokens.map((token) => block(token, depth, quoted)).filter((text) => text !== "")
    .join("\n");
}

/**
 * A list as lines: the marker (see {@link listMarker}), then the item, and its further lines
 * (nested lists) indented under it.
 * @param list the list token
 * @param context as {@link renderBlocks}
 */
export function renderList(
  list: Tokens.List,
  context: { depth: number; quoted: boolean; block: BlockRenderer },
): string {
  return list.items.map((item, index) => {
    const marker = listMarker(list, index, context.depth);
    const content = renderBlocks(item.tokens, { ...context, depth: context.depth + 1 });
    return `${marker} ${content.replaceAll("\n", "\n" + " ".repeat(marker.length + 1))}`;
  }).join("\n");
}

/**
 * Whether a chat can open `href` as a link: an absolute `http`, `https` or `mailto` URL. A
 * relative link (`docs/x.md`) means nothing in a chat, and Telegram refuses some; a `tg://user`
 * link would mention someone, which a payload must not be able to make the agent do.
 * @param href the link's target
 */
export function isOpenableUrl(href: string): boolean {
  return /^(https?:\/\/|mailto:)[^\s]+$/i.test(href);
}

/** A line for a thematic break (`---`), which chats do not draw. */
export const RULE = "──────────";

/** Inline entities a cut should not fall inside: a link, an image, emphasis, inline code. */
const KEPT = new Set(["link", "image", "strong", "em", "del", "codespan"]);

/**
 * The tokens directly inside `node`: a list's items, or its inline or block children.
 * @param node any token
 * @returns its children, none for a leaf
 */
export function childTokens(node: Token): Token[] {
  if (node.type === "list") return (node as Tokens.List).items as Token[];
  return "tokens" in node ? (node.tokens ?? []) as Token[] : [];
}

/**
 * Where in `source` (a block's Markdown) its links, emphasis and inline code are, outermost
 * only, in order, for a cut to keep them whole. An entity whose source is not found as written
 * (a line of a nested list item, whose indentation marked removed) is left out: a cut may fall
 * inside it, as in plain text.
 * @param token a block or list item
 * @param source its Markdown, `token.raw`
 * @returns the spans, sorted and not overlapping
 */
export function entitySpans(token: Token, source: string): Span[] {
  const spans: Span[] = [];
  let cursor = 0;
  const visit = (node: Token) => {
    if (KEPT.has(node.type)) {
      const at = source.indexOf(node.raw, cursor);
      if (at !== -1) {
        spans.push({ start: at, end: at + node.raw.length });
        cursor = at + node.raw.length;
        return;
      }
    }
    for (const child of childTokens(node)) visit(child);
  };
  visit(token);
  return spans;
}
