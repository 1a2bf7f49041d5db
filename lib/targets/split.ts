/**
 * Splits a long message into numbered parts that each fit a platform's limit. A reader gets as
 * few parts as possible, each nearly full, cut where a reader would: between paragraphs, else
 * between lines, else after a sentence, else between words (each only in the second half of a
 * part; a run without blanks across the limit, such as a link, that fits in the next part goes
 * there whole if this part keeps a quarter of the limit), and as a last resort between two
 * grapheme clusters, so a flag, an emoji joined by ZWJ
 * or a skin tone stays whole (a single cluster longer than a part is cut between code points).
 * Markdown code fences stay balanced: a part that ends inside a fence closes it and the next
 * part reopens it with the same info string (CommonMark fences:
 * https://spec.commonmark.org/0.31.2/#fenced-code-blocks). No cut leaves a code block empty:
 * a part does not end on the line that opens a fence, nor start with the line that closes one.
 * {@link splitText} does the same without numbers, and keeps given spans of the text (a
 * Markdown link, a bold phrase) whole unless one alone is longer than a part.
 *
 * @module
 */

import { closes, type Fence, FENCE_LINE, scanFences } from "./_fences.ts";

/** A stretch of text, `[start, end)` in UTF-16 code units, that a cut should not fall inside. */
export interface Span {
  start: number;
  end: number;
}

/** One part before numbering: what it reopens, its slice of the text, what it closes. */
interface Chunk {
  reopen: string;
  body: string;
  close: string;
}

/** A part needs room for text once the number and fences are added; below this, refuse. */
const MIN_ROOM = 8;

/**
 * Splits `text` into parts of at most `maxChars` UTF-16 code units each. More than one part
 * get a `(i/n)` prefix, counted within the limit; fences closed and reopened at cut points are
 * counted too. Whitespace at cut points is dropped, and so is a fence's closing line that
 * would open a part (the previous part's close stands for it); nothing else is lost or reordered.
 *
 * @param text The whole message.
 * @param maxChars The platform's limit per message, in UTF-16 code units (JavaScript length).
 * @param keep Spans of `text` to keep whole (as {@link splitText}), such as escapes.
 * @returns `[text]` when it fits, else the numbered parts in order.
 * @throws {RangeError} When `maxChars` is too small to hold a numbered part (below about 16).
 * @example
 * ```ts
 * splitMessage("The build failed.\n\nSee the log for details.", 30);
 * // ["(1/2) The build failed.", "(2/2) See the log for details."]
 * ```
 */
export function splitMessage(
  text: string,
  maxChars: number,
  keep: readonly Span[] = [],
): string[] {
  if (text.length <= maxChars) return [text];
  for (let digits = 1;; digits++) {
    // "(n/n) " with n of `digits` digits is the longest marker a part of n can get.
    const room = maxChars - (2 * digits + 4);
    if (room < MIN_ROOM) {
      throw new RangeError(`Cannot split a message into parts of ${maxChars} characters`);
    }
    const chunks = chunk(text, room, keep);
    if (String(chunks.length).length <= digits) return chunks.map(numbered);
  }
}

/**
 * Splits `text` into parts of at most `maxChars` UTF-16 code units, as {@link splitMessage}
 * cuts them (fences closed and reopened) but without numbers, and never inside one of `keep`
 * unless that span alone does not fit in a part.
 *
 * @param text The text to cut, such as one Markdown block too long for a message.
 * @param maxChars The most each part may hold, in UTF-16 code units.
 * @param keep Spans of `text` to keep whole, sorted by start and not overlapping.
 * @returns The parts in order; `[text]` when it fits.
 * @throws {RangeError} When `maxChars` is below 8.
 * @example
 * ```ts
 * const text = "See [the build log](https://ci.example/42) for details.";
 * splitText(text, 40, [{ start: 4, end: 42 }]);
 * // ["See", "[the build log](https://ci.example/42)", "for details."]
 * ```
 */
export function splitText(text: string, maxChars: number, keep: readonly Span[]): string[] {
  if (text.length <= maxChars) return [text];
  if (maxChars < MIN_ROOM) {
    throw new RangeError(`Cannot split a text into parts of ${maxChars} characters`);
  }
  return chunk(text, maxChars, keep).map((part) => part.reopen + part.body + part.close);
}

function numbered(chunk: Chunk, index: number, chunks: Chunk[]): string {
  const content = chunk.reopen + chunk.body + chunk.close;
  // A fence must start its line, so a part that opens with one gets the number on its own line.
  const gap = FENCE_LINE.test(content.split("\n", 1)[0]) ? "\n" : " ";
  return `(${index + 1}/${chunks.length})${gap}${content}`;
}

/** The parts of `text`, each at most `room` UTF-16 code units with its fence repair. */
function chunk(text: string, room: number, keep: readonly Span[]): Chunk[] {
  const chunks: Chunk[] = [];
  let fence: Fence | undefined;
  let pos = 0;
  while (hasText(text, pos)) {
    const repaired = fence !== undefined && balanced(fence, room);
    const lineEnd = text.indexOf("\n", pos);
    const line = text.slice(pos, lineEnd === -1 ? text.length : lineEnd);
    if (repaired && closes(fence!, line)) {
      // The previous part closed this fence already; reopening it here would send an empty block.
      fence = undefined;
      pos = skipSpace(text, pos + line.length);
      continue;
    }
    const reopen = repaired ? `${fence!.marker}${fence!.info}\n` : "";
    const part = fill(text, pos, { open: fence, space: room - reopen.length, room, keep });
    if (part.body !== "") chunks.push({ reopen, body: part.body, close: part.close });
    fence = part.after;
    pos = part.next;
  }
  return chunks;
}

/** Fences whose reopen and close would eat more than half a part are left as they are. */
function balanced(fence: Fence, room: number): boolean {
  return 2 * fence.marker.length + fence.info.length + 2 <= room / 2;
}

/** One part's text from a given position, and what follows it. */
interface Part {
  body: string;
  /** The fence closed at the end of the part (`\n` and the marker), or "". */
  close: string;
  /** The fence still open after the part, which the next part reopens. */
  after: Fence | undefined;
  /** Where the next part starts. */
  next: number;
}

/**
 * The part that starts at `pos`: the nicest cut (see {@link cuts}) whose body and closing fence
 * fit `space` and which leaves no empty code block, that is no body ending on the line that opens
 * a fence. When no cut qualifies (a fence line longer than the part), the first that fits.
 */
function fill(
  text: string,
  pos: number,
  { open, space, room, keep }: {
    open: Fence | undefined;
    space: number;
    room: number;
    keep: readonly Span[];
  },
): Part {
  let limit = space;
  // The fence state at each line of what the part may hold, scanned once for all its cuts.
  const lines = scanFences(text, pos, Math.min(text.length, pos + space + 2), open);
  for (;;) {
    let fallback: Part | undefined;
    let tooLong = 0;
    for (const { end, next } of cuts(text, pos, { limit, keep })) {
      const body = text.slice(pos, end).trimEnd();
      const { before, after } = lines.around(pos + body.length);
      const more = hasText(text, next);
      const close = after && more && balanced(after, room) ? `\n${after.marker}` : "";
      if (body.length + close.length > space) {
        tooLong = close.length;
        break;
      }
      const part = { body, close, after, next };
      // An empty body is whitespace at the start of the text: skipped, not sent. A body whose
      // last line opens a fence would leave an empty code block.
      const opensAtEnd = after !== undefined && before === undefined;
      if (body === "" || !more || !opensAtEnd) return part;
      fallback ??= part;
    }
    if (tooLong === 0 && fallback) return fallback;
    // The closing fence did not fit: look again with room for it (strictly less than before).
    limit = space - tooLong;
  }
}

/** Where to cut, nicest first: between paragraphs, lines, sentences, words, else graphemes. */
const SEPARATORS = [
  /\n[ \t]*\n/g,
  /\n/g,
  // After a full stop and its closing quotes or brackets; CJK text has no space to cut at.
  /(?<=[.!?]["')\]]*)[ \t]|(?<=[。！？][\p{Pe}\p{Pf}]*)(?![\p{M}\p{Pe}\p{Pf}\s])/gu,
  /[ \t]/g,
];

/**
 * The places a part that starts at `pos` and holds at most `limit` UTF-16 code units may end,
 * nicest first. `end` is the end of its text, `next` where the following part starts (after the
 * whitespace at the cut). A separator counts only in the second half of the part, so a reader
 * gets few parts, each nearly full, and never inside a span of `keep` that fits in a part; such a
 * span across the limit goes whole to the next part. Failing that, the part is filled to the last
 * grapheme that fits, which is always the last place offered.
 */
function* cuts(
  text: string,
  pos: number,
  { limit, keep }: { limit: number; keep: readonly Span[] },
): Generator<{ end: number; next: number }> {
  if (text.length - pos <= limit) {
    yield { end: text.length, next: text.length };
    return;
  }
  // A span longer than a part is cut like any text.
  const kept = (at: number) => {
    const span = spanAround(keep, at);
    return span !== undefined && span.end - span.start <= limit ? span : undefined;
  };
  const free = (at: number) => kept(pos + at) === undefined;
  // One character past the limit: a separator right there still leaves a part of `limit`.
  const window = text.slice(pos, pos + limit + 2);
  for (const separator of SEPARATORS) {
    const starts = [...window.matchAll(separator)].map((match) => match.index);
    for (const at of starts.filter((at) => at >= limit / 2 && at <= limit && free(at)).reverse()) {
      yield { end: pos + at, next: skipSpace(text, pos + at) };
    }
  }
  const across = kept(pos + limit);
  if (across && skipSpace(text, pos) < across.start) {
    yield { end: across.start, next: skipSpace(text, across.start) };
  }
  // No separator in the second half: the run of text across the limit (a URL, a long word) is
  // kept whole when it fits in the next part and this part keeps a quarter of the limit, cut at
  // the blank before the run rather than inside it.
  const runStart = lastSpace(window, limit);
  if (runStart >= limit / 4 && free(runStart)) {
    const rest = text.slice(pos + limit, pos + runStart + limit + 1);
    const fits = /\s/.test(rest) || pos + runStart + limit + 1 >= text.length;
    if (fits) yield { end: pos + runStart, next: skipSpace(text, pos + runStart) };
  }
  const end = pos + graphemeCut(window, limit);
  yield { end, next: end };
}

/** The span of `spans` (sorted, disjoint) that `index` falls strictly inside, if any. */
function spanAround(spans: readonly Span[], index: number): Span | undefined {
  let low = 0;
  let high = spans.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const span = spans[middle];
    if (span.end <= index) low = middle + 1;
    else if (span.start >= index) high = middle - 1;
    else return span;
  }
  return undefined;
}

/** Where the last whitespace before `limit` in `window` is, or -1. */
function lastSpace(window: string, limit: number): number {
  for (let at = Math.min(limit, window.length) - 1; at >= 0; at--) {
    const code = window.charCodeAt(at);
    // ASCII letters and digits first: a long run of them is what gets here.
    if (code > 0x20 && code < 0x7f) continue;
    if (/\s/.test(window[at])) return at;
  }
  return -1;
}

/** Whether anything but whitespace is left from `from` on. */
function hasText(text: string, from: number): boolean {
  return skipSpace(text, from) < text.length;
}

function skipSpace(text: string, from: number): number {
  let index = from;
  while (index < text.length && /\s/.test(text[index])) index++;
  return index;
}

const GRAPHEMES = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/**
 * The longest prefix of `window` of at most `limit` UTF-16 code units that ends between two
 * grapheme clusters (Unicode UAX #29, https://unicode.org/reports/tr29/), so a flag, a family
 * emoji joined by ZWJ or a letter with its accents stays whole. `window` starts where a part
 * starts (a cluster boundary: regional indicators pair by their count from the start of a run)
 * and holds the code point at `limit`, whose class decides whether a cluster goes on past it.
 * A single cluster longer than `limit` is cut between code points.
 */
function graphemeCut(window: string, limit: number): number {
  const straddling = GRAPHEMES.segment(window).containing(limit);
  if (straddling === undefined || straddling.index > 0) return straddling?.index ?? limit;
  const high = window.charCodeAt(limit - 1);
  return high >= 0xd800 && high <= 0xdbff && limit > 1 ? limit - 1 : limit;
}
