/**
 * The pieces a message is cut into for a chat (`_format.ts`), rendered in its dialect: whole
 * blocks, list items, runs of table rows, and pieces of a block cut as text, each read again as
 * Markdown. A {@link Renderer} renders each of them once for a message, however often the cut is
 * made again.
 *
 * @module
 */

import { type Dialect, entitySpans, lexBlocks, type Token, type Tokens } from "./_markdown.ts";
import type { Span } from "./split.ts";

/** One stretch of the answer, rendered: a block, or a piece of a block too long for a part. */
export interface Piece {
  /** Its Markdown source. */
  markdown: string;
  /** In the target's formatting. */
  rendered: string;
  /** Of `rendered`, as the platform counts it. */
  length: number;
  /** Running text: a part that starts with it has its number on the same line. */
  inline: boolean;
  /** What joins it to the piece before: a line break between a list's items, else a blank line. */
  glue: string;
}

/** What joins two blocks: a blank line. */
export const BLOCK_GLUE = "\n\n";

/**
 * The larger of the piece's rendered and source lengths, in UTF-16 code units: a part must fit
 * as both, since its source is sent when the platform refuses the formatting.
 * @param piece a rendered piece
 */
export function pieceSize(piece: Piece): number {
  return Math.max(piece.length, piece.markdown.length);
}

/** A rendered block; undefined when it renders to nothing. */
function pieceOf(token: Token, dialect: Dialect, glue: string): Piece | undefined {
  const rendered = dialect.block(token);
  if (rendered.trim() === "") return undefined;
  const markdown = token.raw.replace(/^\n+|\s+$/g, "");
  const inline = token.type === "paragraph";
  return { markdown, rendered, length: dialect.length(rendered), inline, glue };
}

/** One piece of a block cut as text, read again as Markdown and rendered. */
function rendered(markdown: string, dialect: Dialect): Piece | undefined {
  const blocks = lexBlocks(markdown);
  const text = blocks.map((token) => dialect.block(token)).filter((each) => each.trim() !== "")
    .join(BLOCK_GLUE);
  if (text === "") return undefined;
  const inline = blocks[0]?.type === "paragraph";
  return { markdown, rendered: text, length: dialect.length(text), inline, glue: BLOCK_GLUE };
}

/**
 * The renderings of one message's blocks, list items, table runs and text pieces, and where its
 * blocks' entities are, each made once: `formattedParts` cuts the message again for each width of
 * the part numbers, and most of what a cut holds is the same at each. Each method returns
 * undefined for what renders to nothing (an empty quote, a link definition).
 * @example
 * ```ts
 * const renderer = new Renderer(telegramHtml);
 * renderer.text("**Build 42** failed"); // { rendered: "<b>Build 42</b> failed", length: 15, ... }
 * ```
 */
export class Renderer {
  readonly #blocks = new Map<Token, Piece | undefined>();
  readonly #runs = new Map<string, Piece | undefined>();
  readonly #texts = new Map<string, Piece | undefined>();
  readonly #spans = new Map<Token, Span[]>();

  /** @param dialect the chat's rendering, kept for the message's life */
  constructor(readonly dialect: Dialect) {}

  /** A block, or a list of one item whose `key` is the item, rendered. */
  block(token: Token, glue: string, key: Token = token): Piece | undefined {
    return once(this.#blocks, key, () => pieceOf(token, this.dialect, glue));
  }

  /** A run of a table's rows under its header: a table of its own, known by its Markdown. */
  run(table: Tokens.Table): Piece | undefined {
    return once(this.#runs, table.raw, () => pieceOf(table, this.dialect, BLOCK_GLUE));
  }

  /** A piece of a block cut as text. */
  text(markdown: string): Piece | undefined {
    return once(this.#texts, markdown, () => rendered(markdown, this.dialect));
  }

  /** Where a block's (or list item's) entities are in its Markdown. */
  spans(token: Token): Span[] {
    return once(this.#spans, token, () => entitySpans(token, token.raw));
  }
}

function once<K, V>(made: Map<K, V>, key: K, make: () => V): V {
  if (made.has(key)) return made.get(key) as V;
  const value = make();
  made.set(key, value);
  return value;
}
