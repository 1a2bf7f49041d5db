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
 * The answer is lexed once, and each block, list item, run of table rows and piece of text is
 * rendered once however often it is weighed (`_pieces.ts`; the cut is made again for each width of
 * the part numbers), so the time grows with the answer's length, not with its square.
 *
 * @module
 */

import { type Dialect, lexBlocks, type Token, type Tokens } from "./_markdown.ts";
import { BLOCK_GLUE, type Piece, pieceSize, Renderer } from "./_pieces.ts";
import { type Span, splitMessage, splitText } from "./split.ts";
import type { MessageFormat, MessagePart } from "./_target.ts";

/**
 * The parts of a message for one target.
 *
 * @param text The message: an agent's answer or a rendered template.
 * @param options `format`: how `text` is meant (`markdown` is rendered when the target has a
 *   `dialect`, else sent as written; `plain` is escaped when the dialect draws Markdown in any
 *   message, Discord's); `maxChars`: the target's limit per message, in UTF-16 code units, absent
 *   for none.
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
  const escape = format === "plain" ? dialect?.escapePlain : undefined;
  const written = escape === undefined ? text : escape(text);
  // An escape (`\*`) is kept whole: cut between its two characters, it would show the markup.
  const escapes = written === text ? [] : spansOf(written, /\\[^]/g);
  const texts = maxChars === undefined ? [written] : splitMessage(written, maxChars, escapes);
  return texts.map((part) => ({ text: part, formatted: false, plain: part }));
}

/** Where `pattern` (global) matches in `text`. */
function spansOf(text: string, pattern: RegExp): Span[] {
  return [...text.matchAll(pattern)].map((match) => ({
    start: match.index,
    end: match.index + match[0].length,
  }));
}

/** The rendered parts of `markdown`, or none when it renders to nothing. */
function formattedParts(markdown: string, maxChars: number, dialect: Dialect): MessagePart[] {
  const blocks = lexBlocks(markdown);
  const renderer = new Renderer(dialect);
  const whole = pack(pieces(blocks, maxChars, renderer), maxChars);
  if (whole.length <= 1) return whole.map((group) => part(group, ""));
  for (let digits = 1;; digits++) {
    // "(n/n)" and the space or line break after it, with n of `digits` digits.
    const room = maxChars - (2 * digits + 4);
    const groups = pack(pieces(blocks, room, renderer), room);
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

/** The pieces of the blocks, each at most `room` rendered and as Markdown. */
function pieces(blocks: readonly Token[], room: number, renderer: Renderer): Piece[] {
  return blocks.flatMap((token) => blockPieces(token, room, renderer));
}

/** A block as one piece, or cut in pieces when it is longer than `room`. */
function blockPieces(token: Token, room: number, renderer: Renderer): Piece[] {
  const whole = renderer.block(token, BLOCK_GLUE);
  if (whole === undefined || pieceSize(whole) <= room) return whole ? [whole] : [];
  if (token.type === "list") return listPieces(token as Tokens.List, room, renderer);
  if (token.type === "table") {
    const rows = tablePieces(token as Tokens.Table, room, renderer);
    if (rows !== undefined) return rows;
  }
  return textPieces(token.raw, { room, renderer, keep: renderer.spans(token) });
}

/** A list too long for a part, item by item: each a list of one, numbered as it was. */
function listPieces(list: Tokens.List, room: number, renderer: Renderer): Piece[] {
  return list.items.flatMap((item, index) => {
    const start = list.ordered ? (Number(list.start) || 1) + index : "";
    const one: Tokens.List = { ...list, items: [item], start, raw: item.raw };
    const glue = index === 0 ? BLOCK_GLUE : "\n";
    const piece = renderer.block(one, glue, item);
    if (piece === undefined) return [];
    if (pieceSize(piece) <= room) return [piece];
    const cut = textPieces(item.raw, { room, renderer, keep: renderer.spans(item), dedent: true });
    return cut.map((each, at) => at === 0 ? { ...each, glue } : each);
  });
}

/**
 * A table too long for a part, in runs of rows under its header, each as long as fits; undefined
 * if a row alone does not. A run's size only grows with its rows (a row adds a line, and can only
 * widen the columns), so the longest run that fits is searched for, from the length of the run
 * before: each row is rendered a few times, not once for every run it could end.
 */
function tablePieces(table: Tokens.Table, room: number, renderer: Renderer): Piece[] | undefined {
  const lines = table.raw.replace(/\s+$/, "").split("\n");
  if (lines.length !== table.rows.length + 2) return undefined;
  const fitting = (from: number, to: number) => {
    const raw = [lines[0], lines[1], ...lines.slice(2 + from, 2 + to)].join("\n");
    const run = renderer.run({ ...table, rows: table.rows.slice(from, to), raw });
    return run !== undefined && pieceSize(run) <= room ? run : undefined;
  };
  const runs: Piece[] = [];
  let rows = 1;
  for (let from = 0; from < table.rows.length; from += rows) {
    const left = table.rows.length - from;
    rows = longestFit(left, rows, (count) => fitting(from, from + count) !== undefined);
    if (rows === 0) return undefined;
    runs.push(fitting(from, from + rows)!);
  }
  return runs;
}

/**
 * The largest count from 1 to `max` that `fits`, or 0 when 1 does not, for a `fits` that holds up
 * to some count and not above it: from `guess`, in steps that double, in the direction `guess`
 * answered until the answer changes, then halving the gap between the two.
 */
function longestFit(max: number, guess: number, fits: (count: number) => boolean): number {
  let low = 0; // the largest count known to fit
  let high = max + 1; // the smallest count known not to
  let probe = Math.min(Math.max(guess, 1), max);
  const up = fits(probe);
  if (up) low = probe;
  else high = probe;
  for (let step = 1; high - low > 1; step *= 2) {
    probe = up ? Math.min(low + step, high - 1) : Math.max(high - step, low + 1);
    const fit = fits(probe);
    if (fit) low = probe;
    else high = probe;
    if (fit !== up) break;
  }
  while (high - low > 1) {
    const middle = (low + high) >> 1;
    if (fits(middle)) low = middle;
    else high = middle;
  }
  return low;
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
  options: { room: number; renderer: Renderer; keep: Span[]; dedent?: boolean },
): Piece[] {
  const { room, renderer, keep } = options;
  for (let sourceRoom = room;;) {
    const cut: Piece[] = [];
    let longest = 0;
    for (const part of splitText(text.replace(/\s+$/, ""), sourceRoom, keep)) {
      const piece = renderer.text(options.dedent ? dedent(part) : part);
      if (piece === undefined) continue;
      cut.push(piece);
      longest = Math.max(longest, piece.length);
    }
    if (longest <= room) return cut;
    // Rendering grows text about in proportion (escapes, padding): shrink the room as much.
    sourceRoom = Math.min(sourceRoom - 1, Math.floor((sourceRoom * room) / longest));
  }
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
