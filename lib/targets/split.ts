/**
 * Splits a long message into numbered parts that each fit a platform's limit, cutting where a
 * reader would: between paragraphs, else between lines, else between words, and only as a last
 * resort inside a word (never inside a UTF-16 surrogate pair or, when avoidable, a grapheme).
 * Markdown code fences stay balanced: a part that ends inside a fence closes it and the next
 * part reopens it with the same info string (CommonMark fences:
 * https://spec.commonmark.org/0.31.2/#fenced-code-blocks).
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
 * counted too. Whitespace at cut points is dropped; nothing else is lost or reordered.
 *
 * @param text The whole message.
 * @param maxChars The platform's limit per message, in UTF-16 code units (JavaScript length).
 * @returns `[text]` when it fits, else the numbered parts in order.
 * @throws {RangeError} When `maxChars` is too small to hold a numbered part (below about 16).
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

function chunk(text: string, room: number): Chunk[] {
  const chunks: Chunk[] = [];
  let fence: Fence | undefined;
  let pos = 0;
  while (hasText(text, pos)) {
    const reopen = fence && balanced(fence, room) ? `${fence.marker}${fence.info}\n` : "";
    const space = room - reopen.length;
    let limit = space;
    for (;;) {
      const cut = findCut(text, pos, limit);
      const body = text.slice(pos, cut.end).trimEnd();
      const after = fenceAfter(fence, body);
      const more = hasText(text, cut.next);
      const close = after && more && balanced(after, room) ? `\n${after.marker}` : "";
      if (body.length + close.length <= space) {
        if (body !== "") chunks.push({ reopen, body, close });
        fence = after;
        pos = cut.next;
        break;
      }
      limit = space - close.length;
    }
  }
  return chunks;
}

/** Fences whose reopen and close would eat more than half a part are left as they are. */
function balanced(fence: Fence, room: number): boolean {
  return 2 * fence.marker.length + fence.info.length + 2 <= room / 2;
}

/**
 * Where to end a part that starts at `pos` and may hold `limit` characters: `end` is the end of
 * its text, `next` where the following part starts (after the whitespace at the cut).
 */
function findCut(text: string, pos: number, limit: number): { end: number; next: number } {
  if (text.length - pos <= limit) return { end: text.length, next: text.length };
  // One character past the limit: a separator right there still leaves a part of `limit`.
  const window = text.slice(pos, pos + limit + 2);
  for (const minimum of [limit / 2, 1]) {
    for (const separator of [/\n[ \t]*\n/g, /\n/g, /[ \t]/g]) {
      const at = lastMatch(window, separator, limit);
      if (at >= minimum) return { end: pos + at, next: skipSpace(text, pos + at) };
    }
  }
  const end = pos + hardCut(text.slice(pos, pos + limit + 1), limit);
  return { end, next: end };
}

/** The index of the last match of `pattern` that starts at or before `limit`, or -1. */
function lastMatch(window: string, pattern: RegExp, limit: number): number {
  let last = -1;
  for (const match of window.matchAll(pattern)) {
    if (match.index > limit) break;
    last = match.index;
  }
  return last;
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

/** The longest prefix of at most `limit` units that ends on a grapheme (or code point) boundary. */
function hardCut(window: string, limit: number): number {
  const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" });
  let best = 0;
  const from = Math.max(0, limit - 64);
  for (const { index } of segmenter.segment(window.slice(from))) {
    if (from + index > limit) break;
    best = from + index;
  }
  if (best > 0 && best >= limit - 32) return best;
  // A grapheme longer than the search span: fall back to not splitting a surrogate pair.
  const high = window.charCodeAt(limit - 1);
  return high >= 0xd800 && high <= 0xdbff && limit > 1 ? limit - 1 : limit;
}

/** The fence still open after `body`, given the one open before it. */
function fenceAfter(open: Fence | undefined, body: string): Fence | undefined {
  let fence = open;
  for (const line of body.split("\n")) {
    const match = FENCE_LINE.exec(line.trimEnd());
    if (match === null) continue;
    const [, marker, rest] = match;
    if (fence === undefined) {
      // A backtick fence's info string cannot hold a backtick (that line is inline code).
      if (marker[0] === "`" && rest.includes("`")) continue;
      fence = { marker, info: rest.trim() };
    } else if (
      marker[0] === fence.marker[0] && marker.length >= fence.marker.length && rest.trim() === ""
    ) {
      fence = undefined;
    }
  }
  return fence;
}
