/**
 * `JSON.stringify(value, null, 2)` that stops at a length limit, so a huge or very deep payload
 * costs at most the limit to print (templates cut objects at 2,000 and the raw payload at
 * 4,000 characters, docs/templates.md).
 *
 * @module
 */
import { RawJson } from "./payload.ts";

/** Appended to JSON text that was cut; it counts toward the limit. */
export const CUT_MARKER = "…";

/** Signals that the bounded printer reached its limit. */
class Full extends Error {}

/** Collects output and throws {@link Full} once it passes `maxChars` characters. */
class BoundedWriter {
  readonly parts: string[] = [];
  length = 0;
  constructor(readonly maxChars: number) {}
  emit(text: string): void {
    this.parts.push(text);
    this.length += text.length;
    if (this.length > this.maxChars) throw new Full();
  }
  /** JSON literal of `text`, or of a prefix long enough to fill the room left. */
  quote(text: string): string {
    // Escaping only lengthens text, so a prefix a little past the room fills it just as well.
    const room = this.maxChars - this.length + 2;
    return JSON.stringify(text.length > room ? text.slice(0, room) : text);
  }
}

/**
 * `JSON.stringify(value, null, 2)`, stopping once `maxChars` characters are reached: the output
 * is the same text, cut to at most `maxChars` characters ending in {@link CUT_MARKER}.
 * @param value any parsed JSON value (a `RawJson` number prints as its text)
 * @param maxChars the longest text returned, marker included
 * @returns the JSON text, whole or cut
 */
export function boundedJson(value: unknown, maxChars: number): string {
  const writer = new BoundedWriter(maxChars);
  try {
    printJson(value, "", writer);
  } catch (error) {
    if (!(error instanceof Full)) throw error;
    return cut(writer.parts.join(""), maxChars);
  }
  return writer.parts.join("");
}

/** Prints `value` as `JSON.stringify(value, null, 2)` does, into `writer`. */
function printJson(value: unknown, indent: string, writer: BoundedWriter): void {
  if (typeof value === "string") return writer.emit(writer.quote(value));
  if (RawJson.isRawJSON(value)) return writer.emit(value.rawJSON);
  if (typeof value === "number") return writer.emit(Number.isFinite(value) ? `${value}` : "null");
  if (typeof value === "boolean") return writer.emit(`${value}`);
  if (typeof value !== "object" || value === null) return writer.emit("null");
  const [open, close] = Array.isArray(value) ? ["[", "]"] : ["{", "}"];
  const inner = indent + "  ";
  let count = 0;
  const entry = (label: string, item: unknown) => {
    writer.emit(`${count++ === 0 ? open : ","}\n${inner}${label}`);
    printJson(item, inner, writer);
  };
  if (Array.isArray(value)) {
    for (const item of value) entry("", item ?? null);
  } else {
    const record = value as Record<string, unknown>;
    // `for…in` can stop early, unlike `Object.keys`, on an object with a million keys.
    for (const key in record) {
      if (Object.hasOwn(record, key) && record[key] !== undefined) {
        entry(`${writer.quote(key)}: `, record[key]);
      }
    }
  }
  writer.emit(count === 0 ? open + close : `\n${indent}${close}`);
}

/**
 * Cuts `text` to `maxChars` characters including the marker, never inside a surrogate pair.
 * @param text the text to cut, longer than `maxChars`
 * @param maxChars the longest text returned
 * @returns the start of `text` and {@link CUT_MARKER}
 */
export function cut(text: string, maxChars: number): string {
  let end = Math.max(0, maxChars - CUT_MARKER.length);
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return text.slice(0, end) + CUT_MARKER;
}
