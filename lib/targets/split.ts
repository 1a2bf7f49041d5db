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
 *
 * @module
 */

/** An open code fence: its backtick or tilde run and its info string (`ts`, `json`, ...). */
interface Fence {
  marker: string;
  info: string;
}

/** One part before numbering: what it reopens, its slice of the text, what it closes. */
interface Chunk {
  reopen: string;
  body: string;
  close: string;
}

const FENCE_LINE = /^ {0,3}(`{3,}|~{3,})(.*)$/;
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
 * @returns `[text]` when it fits, else the numbered parts in order.
 * @throws {RangeError} When `maxChars` is too small to hold a numbered part (below about 16).
 * @example
 * ```ts
 * splitMessage("The build failed.\n\nSee the log for details.", 30);
 * // ["(1/2) The build failed.", "(2/2) See the log for details."]
 * ```
 */
export function splitMessage(text: string, maxChars: number): string[] {
  if (text.length <= maxChars) return [text];
  for (let digits = 1;; digits++) {
    // "(n/n) " with n of `digits` digits is the longest marker a part of n can get.
    const room = maxChars - (2 * digits + 4);
    if (room < MIN_ROOM) {
      throw new RangeError(`Cannot split a message into parts of ${maxChars} characters`);
    }
    const chunks = chunk(text, room);
    if (String(chunks.length).length <= digits) return chunks.map(numbered);
  }
}

function numbered(chunk: Chunk, index: number, chunks: Chunk[]): string {
  const content = chunk.reopen + chunk.body + chunk.close;
  // A fence must start its line, so a part that opens with one gets the number on its own line.
  const gap = FENCE_LINE.test(content.split("\n", 1)[0]) ? "\n" : " ";
  return `(${index + 1}/${chunks.length})${gap}${content}`;
}

/** The parts of `text`, each at most `room` UTF-16 code units with its fence repair. */
function chunk(text: string, room: number): Chunk[] {
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
    const part = fill(text, pos, { open: fence, space: room - reopen.length, room });
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
  { open, space, room }: { open: Fence | undefined; space: number; room: number },
): Part {
  let limit = space;
  // The fence state at each line of what the part may hold, scanned once for all its cuts.
  const lines = scanFences(text, pos, Math.min(text.length, pos + space + 2), open);
  for (;;) {
    let fallback: Part | undefined;
    let tooLong = 0;
    for (const { end, next } of cuts(text, pos, limit)) {
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
 * gets few parts, each nearly full; failing that, the part is filled to the last grapheme that
 * fits, which is always the last place offered.
 */
function* cuts(text: string, pos: number, limit: number): Generator<{ end: number; next: number }> {
  if (text.length - pos <= limit) {
    yield { end: text.length, next: text.length };
    return;
  }
  // One character past the limit: a separator right there still leaves a part of `limit`.
  const window = text.slice(pos, pos + limit + 2);
  for (const separator of SEPARATORS) {
    const starts = [...window.matchAll(separator)].map((match) => match.index);
    for (const at of starts.filter((at) => at >= limit / 2 && at <= limit).reverse()) {
      yield { end: pos + at, next: skipSpace(text, pos + at) };
    }
  }
  // No separator in the second half: the run of text across the limit (a URL, a long word) is
  // kept whole when it fits in the next part and this part keeps a quarter of the limit, cut at
  // the blank before the run rather than inside it.
  const runStart = lastSpace(window, limit);
  if (runStart >= limit / 4) {
    const rest = text.slice(pos + limit, pos + runStart + limit + 1);
    const fits = /\s/.test(rest) || pos + runStart + limit + 1 >= text.length;
    if (fits) yield { end: pos + runStart, next: skipSpace(text, pos + runStart) };
  }
  const end = pos + graphemeCut(window, limit);
  yield { end, next: end };
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

/** The fences open along the lines of a stretch of text, for {@link fill}'s cuts. */
interface FenceScan {
  /**
   * The fence open before the line that holds `end`, and after the text up to `end` (that line
   * read up to `end`, as a part ending there reads it).
   */
  around(end: number): { before: Fence | undefined; after: Fence | undefined };
}

/**
 * Scans the lines of `text` from `pos` to `end` once, so that each cut {@link fill} weighs
 * costs a search, not a scan of the whole part again (slow for a part of thousands of short
 * fenced lines).
 * @param open the fence open at `pos`
 */
function scanFences(text: string, pos: number, end: number, open: Fence | undefined): FenceScan {
  const starts = [pos];
  const before = [open];
  let fence = open;
  for (let at = text.indexOf("\n", pos); at !== -1 && at < end; at = text.indexOf("\n", at + 1)) {
    fence = fenceAfterLine(fence, text.slice(starts[starts.length - 1], at));
    starts.push(at + 1);
    before.push(fence);
  }
  return {
    around(bodyEnd) {
      // The last line start at or before bodyEnd (a body never ends past `end`).
      let low = 0;
      let high = starts.length - 1;
      while (low < high) {
        const middle = (low + high + 1) >> 1;
        if (starts[middle] <= bodyEnd) low = middle;
        else high = middle - 1;
      }
      const line = text.slice(starts[low], bodyEnd);
      return { before: before[low], after: fenceAfterLine(before[low], line) };
    },
  };
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

/** Whether `line` closes `fence` (CommonMark: same character, at least as long, no info). */
function closes(fence: Fence, line: string): boolean {
  const match = FENCE_LINE.exec(line.trimEnd());
  return match !== null && match[1][0] === fence.marker[0] &&
    match[1].length >= fence.marker.length && match[2].trim() === "";
}

/** The fence still open after `line`, given the one open before it. */
function fenceAfterLine(open: Fence | undefined, line: string): Fence | undefined {
  const match = FENCE_LINE.exec(line.trimEnd());
  if (match === null) return open;
  const [, marker, rest] = match;
  if (open === undefined) {
    // A backtick fence's info string cannot hold a backtick (that line is inline code).
    return marker[0] === "`" && rest.includes("`") ? undefined : { marker, info: rest.trim() };
  }
  return closes(open, line) ? undefined : open;
}
