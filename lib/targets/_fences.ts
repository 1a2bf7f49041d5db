/**
 * Markdown code fences along a text, for `split.ts`: which fence is open at each line, so that a
 * part cut inside a code block can close it and the next part reopen it. CommonMark fences:
 * https://spec.commonmark.org/0.31.2/#fenced-code-blocks
 *
 * @module
 */

/** An open code fence: its backtick or tilde run and its info string (`ts`, `json`, ...). */
export interface Fence {
  marker: string;
  info: string;
}

/** A line that opens or closes a fence: up to three spaces, three or more ` or ~, the rest. */
export const FENCE_LINE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

/** The fences open along the lines of a stretch of text, for the cuts of a part. */
export interface FenceScan {
  /**
   * The fence open before the line that holds `end`, and after the text up to `end` (that line
   * read up to `end`, as a part ending there reads it).
   */
  around(end: number): { before: Fence | undefined; after: Fence | undefined };
}

/**
 * Scans the lines of `text` from `pos` to `end` once, so that each cut a part weighs
 * costs a search, not a scan of the whole part again (slow for a part of thousands of short
 * fenced lines).
 * @param open the fence open at `pos`
 */
export function scanFences(
  text: string,
  pos: number,
  end: number,
  open: Fence | undefined,
): FenceScan {
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

/** Whether `line` closes `fence` (CommonMark: same character, at least as long, no info). */
export function closes(fence: Fence, line: string): boolean {
  const match = FENCE_LINE.exec(line.trimEnd());
  return match !== null && match[1][0] === fence.marker[0] &&
    match[1].length >= fence.marker.length && match[2].trim() === "";
}

/** The fence still open after `line`, given the one open before it. */
export function fenceAfterLine(open: Fence | undefined, line: string): Fence | undefined {
  const match = FENCE_LINE.exec(line.trimEnd());
  if (match === null) return open;
  const [, marker, rest] = match;
  if (open === undefined) {
    // A backtick fence's info string cannot hold a backtick (that line is inline code).
    return marker[0] === "`" && rest.includes("`") ? undefined : { marker, info: rest.trim() };
  }
  return closes(open, line) ? undefined : open;
}
