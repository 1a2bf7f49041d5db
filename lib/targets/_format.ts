/**
 * A message as the parts a target sends: plain text cut by `splitMessage`, or Markdown rendered
 * in the target's dialect (docs/targets.md#formatting).
 *
 * Markdown is cut before it is rendered, so that no part ends inside an HTML tag or a Slack link:
 * the answer is read as blocks (paragraphs, lists, code blocks, tables, ...), as many whole blocks
 * as fit go in each part, and a block too long for a part is cut by items (a list), by rows under
 * its header (a table), or as text (`splitText`: between paragraphs, lines, sentences, words; code
 * fences closed and reopened; links and bold phrases kept whole). Each part is rendered on its own,
 * and fits the limit both rendered and as its Markdown source, which is what is sent when a
 * platform refuses the formatting.
 *
 * @module
 */

import { type Dialect, lexBlocks, type Token, type Tokens } from "./_markdown.ts";
import { type Span, splitMessage, splitText } from "./split.ts";
import type { MessageFormat, MessagePart } from "./_target.ts";

/** One stretch of the answer, rendered: a block, or a piece of a block too long for a part. */
interface Piece {
  /** Its Markdown source. */
  markdown: string;
  /** In the target's formatting. */
  rendered: string;
  /** Of `rendered`, as the platform counts it. */
  length: number;
  /** Running text: a part that starts with it has its number on the same line. */
  inline: boolean;
  /** What joins it to the piece before: a line break between the items of a list, else a blank line. */
  glue: string;
}

const BLOCK_GLUE = "\n\n";

/**
 * The parts of a message for one target.
 *
 * @param text The message: an agent's answer or a rendered template.
 * @param options `format`: how `text` is meant (`markdown` is rendered when the target has a
 *   `dialect`, else sent as written); `maxChars`: the target's limit per message, in UTF-16 code
 *   units, absent for none.
 * @returns The parts in order, numbered `(i/n)` when there are several.
 * @throws {RangeError} When `maxChars` cannot hold a numbered part (below about 16).
 * @example
 * ```ts
 * messageParts("**Build 42** failed", { format: "markdown", maxChars: 4096, dialect: telegramHtml });
 * // [{ text: "<b>Build 42</b> failed", formatted: true, plain: "**Build 42** failed" }]
 * ```
 */
export function messageParts(
  text: string,
  options: { format: MessageFormat; maxChars?: number; dialect?: Dialect },
): MessagePart[] {
  const { format, maxChars, dialect } = options;
  if (format === "markdown" && dialect !== undefined && maxChars !== undefined) {
    try {
      const parts = formattedParts(text, maxChars, dialect);
      if (parts.length > 0) return parts;
    } catch (error) {
      // A block whose rendering outgrows every cut of it: the text is still sent, as written.
      if (!(error instanceof RangeError)) throw error;
    }
  }
  const texts = maxChars === undefined ? [text] : splitMessage(text, maxChars);
  return texts.map((part) => ({ text: part, formatted: false, plain: part }));
}

/** The rendered parts of `markdown`, or none when it renders to nothing. */
function formattedParts(markdown: string, maxChars: number, dialect: Dialect): MessagePart[] {
  const whole = pack(pieces(markdown, maxChars, dialect), maxChars);
  if (whole.length <= 1) return whole.map((group) => part(group, ""));
  for (let digits = 1;; digits++) {
    // "(n/n)" and the space or line break after it, with n of `digits` digits.
    const room = maxChars - (2 * digits + 4);
    const groups = pack(pieces(markdown, room, dialect), room);
    if (String(groups.length).length <= digits) {
      return groups.map((group, index) => part(group, `(${index + 1}/${groups.length})`));
    }
  }
}

/** One part: its pieces joined, after its number (`(2/5)`) when it has one. */
function part(group: Piece[], number: string): MessagePart {
  const prefix = number === "" ? "" : number + (group[0].inline ? " " : "\n");
  const join = (field: "rendered" | "markdown") =>
    group.map((piece, index) => (index === 0 ? "" : piece.glue) + piece[field]).join("");
  return { text: prefix + join("rendered"), formatted: true, plain: prefix + join("markdown") };
}

/** Pieces in parts of at most `room`, rendered and as Markdown, each as full as it can be. */
function pack(all: Piece[], room: number): Piece[][] {
  const groups: Piece[][] = [];
  let group: Piece[] = [];
  let rendered = 0;
  let source = 0;
  for (const piece of all) {
    const glue = piece.glue.length;
    if (
      group.length > 0 &&
      (rendered + glue + piece.length > room || source + glue + piece.markdown.length > room)
    ) {
      groups.push(group);
      group = [];
    }
    const joined = group.length === 0 ? 0 : glue;
    if (group.length === 0) rendered = source = 0;
    group.push(piece);
    rendered += joined + piece.length;
    source += joined + piece.markdown.length;
  }
  if (group.length > 0) groups.push(group);
  return groups;
}

/** The larger of the piece's rendered and source lengths: a part must fit as both. */
function pieceSize(piece: Piece): number {
  return Math.max(piece.length, piece.markdown.length);
}

/** The pieces of `markdown`, each at most `room` rendered and as Markdown. */
function pieces(markdown: string, room: number, dialect: Dialect): Piece[] {
  return lexBlocks(markdown).flatMap((token) => blockPieces(token, room, dialect));
}

/** A block as one piece, or cut in pieces when it is longer than `room`. */
function blockPieces(token: Token, room: number, dialect: Dialect): Piece[] {
  const whole = pieceOf(token, dialect, BLOCK_GLUE);
  if (whole === undefined || pieceSize(whole) <= room) return whole ? [whole] : [];
  if (token.type === "list") return listPieces(token as Tokens.List, room, dialect);
  if (token.type === "table") {
    const rows = tablePieces(token as Tokens.Table, room, dialect);
    if (rows !== undefined) return rows;
  }
  return textPieces(token.raw, { room, dialect, keep: keptSpans(token, token.raw) });
}

/** A rendered block; undefined when it renders to nothing. */
function pieceOf(token: Token, dialect: Dialect, glue: string): Piece | undefined {
  const rendered = dialect.block(token);
  if (rendered.trim() === "") return undefined;
  const markdown = token.raw.replace(/^\n+|\s+$/g, "");
  const inline = token.type === "paragraph";
  return { markdown, rendered, length: dialect.length(rendered), inline, glue };
}

/** A list too long for a part, item by item: each a list of one, numbered as it was. */
function listPieces(list: Tokens.List, room: number, dialect: Dialect): Piece[] {
  return list.items.flatMap((item, index) => {
    const start = list.ordered ? (Number(list.start) || 1) + index : "";
    const one: Tokens.List = { ...list, items: [item], start, raw: item.raw };
    const glue = index === 0 ? BLOCK_GLUE : "\n";
    const piece = pieceOf(one, dialect, glue);
    if (piece === undefined) return [];
    if (pieceSize(piece) <= room) return [piece];
    const cut = textPieces(item.raw, {
      room,
      dialect,
      keep: keptSpans(item, item.raw),
      dedent: true,
    });
    return cut.map((each, at) => at === 0 ? { ...each, glue } : each);
  });
}

/** A table too long for a part, in runs of rows under its header; undefined if a row alone is. */
function tablePieces(table: Tokens.Table, room: number, dialect: Dialect): Piece[] | undefined {
  const lines = table.raw.replace(/\s+$/, "").split("\n");
  if (lines.length !== table.rows.length + 2) return undefined;
  const runOf = (from: number, to: number) =>
    pieceOf(
      {
        ...table,
        rows: table.rows.slice(from, to),
        raw: [lines[0], lines[1], ...lines.slice(2 + from, 2 + to)].join("\n"),
      },
      dialect,
      BLOCK_GLUE,
    );
  const runs: Piece[] = [];
  for (let from = 0; from < table.rows.length;) {
    let to = from + 1;
    let run = runOf(from, to);
    if (run === undefined || pieceSize(run) > room) return undefined;
    while (to < table.rows.length) {
      const next = runOf(from, to + 1);
      if (next === undefined || pieceSize(next) > room) break;
      [run, to] = [next, to + 1];
    }
    runs.push(run);
    from = to;
  }
  return runs;
}

/**
 * A block cut as text: each piece at most `room` as Markdown, and rendered, which can be longer
 * (a table's padding, Slack's escapes): then the text is cut again with less room.
 * @param options `dedent`: remove the indentation pieces share (a list item's continuation lines,
 *   which would read as a code block at four spaces)
 * @throws {RangeError} When no room is left.
 */
function textPieces(
  text: string,
  options: { room: number; dialect: Dialect; keep: Span[]; dedent?: boolean },
): Piece[] {
  const { room, dialect, keep } = options;
  for (let sourceRoom = room;;) {
    const cut = splitText(text.replace(/\s+$/, ""), sourceRoom, keep)
      .map((part) => options.dedent ? dedent(part) : part)
      .map((part) => rendered(part, dialect))
      .filter((piece) => piece !== undefined);
    const longest = Math.max(0, ...cut.map((piece) => piece.length));
    if (longest <= room) return cut;
    // Rendering grows text about in proportion (escapes, padding): shrink the room as much.
    sourceRoom = Math.min(sourceRoom - 1, Math.floor((sourceRoom * room) / longest));
  }
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

/** `text` without the indentation all its lines share. */
function dedent(text: string): string {
  const lines = text.split("\n");
  const indents = lines.filter((line) => line.trim() !== "").map((line) =>
    /^ */.exec(line)![0].length
  );
  const common = Math.min(...indents);
  return common > 0 && common !== Infinity
    ? lines.map((line) => line.slice(common)).join("\n")
    : text;
}

/** Inline entities a cut should not fall inside: a link, an image, emphasis, inline code. */
const KEPT = new Set(["link", "image", "strong", "em", "del", "codespan"]);

/**
 * Where in `source` (a block's Markdown) its links, emphasis and inline code are, outermost
 * only, in order. An entity whose source is not found as written (a line of a nested list item,
 * whose indentation marked removed) is left out: a cut may fall inside it, as in plain text.
 */
function keptSpans(token: Token, source: string): Span[] {
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
    const children = node.type === "list"
      ? (node as Tokens.List).items
      : "tokens" in node
      ? node.tokens
      : undefined;
    for (const child of (children ?? []) as Token[]) visit(child);
  };
  visit(token);
  return spans;
}
