/**
 * Parsing a verified body into a payload, the "parse" step of docs/http.md: strict UTF-8, a
 * nesting-depth limit checked after `JSON.parse`, and the form bodies some senders send
 * (GitHub's form mode, Slack's slash commands).
 *
 * @module
 */
import { BodyError } from "./_body.ts";

/** Deepest nesting of arrays and objects accepted in a JSON body. */
export const MAX_JSON_DEPTH = 64;

const utf8 = new TextDecoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Parses a verified body into a payload: JSON, or a form (`application/x-www-form-urlencoded`)
 * whose `payload` field is JSON (GitHub's form mode) or whose fields become an object (Slack's
 * slash commands), as far as `options.forms` allows. A body that starts with `{` or `[` is JSON
 * whatever its Content-Type says: `curl -d '{...}'`, as many monitoring scripts send it, labels
 * it a form, and read as one it would become a single field named after the whole JSON text.
 * @param body the raw bytes
 * @param contentType the request's Content-Type, or null
 * @param options `forms`: `any` (@default), `payload` (only a form whose one field is
 *   `payload`), or `none` (JSON only); the caller narrows it by signature scheme
 * @returns the parsed payload, and its JSON text (the body itself for JSON bodies, so it is
 *   stored byte for byte as received)
 * @throws BodyError 400 for an empty body, invalid UTF-8, invalid JSON, nesting deeper than
 *   {@link MAX_JSON_DEPTH}, or a form that is not allowed
 */
export function parsePayload(
  body: Uint8Array,
  contentType: string | null,
  options: { forms?: "any" | "payload" | "none" } = {},
): { value: unknown; json: string } {
  if (body.byteLength === 0) throw new BodyError(400, "empty body: expected a JSON payload");
  const text = utf8.decode(body);
  // The lenient decoder is much faster; only a text with U+FFFD can hide invalid bytes.
  if (text.includes("\uFFFD")) {
    try {
      strictUtf8.decode(body);
    } catch {
      throw new BodyError(400, "body is not valid UTF-8");
    }
  }
  const mediaType = contentType?.split(";")[0].trim().toLowerCase() ?? "";
  if (mediaType === "application/x-www-form-urlencoded" && !JSON_START.test(text)) {
    // URLSearchParams turns a percent-encoded invalid sequence (%FF) into U+FFFD; the strict
    // decoder refuses it, as the raw body's bytes are refused above.
    if (text.includes("%") && !isStrictFormUtf8(text)) {
      throw new BodyError(400, "form body is not valid UTF-8 once percent-decoded");
    }
    const form = new URLSearchParams(text);
    const payload = form.get("payload");
    const forms = options.forms ?? "any";
    if (forms === "none") throw new BodyError(400, "a body signed this way must be JSON");
    const onlyPayload = payload !== null && [...form.keys()].every((key) => key === "payload");
    if (!onlyPayload && forms === "payload") {
      throw new BodyError(
        400,
        "a form body signed this way must hold the JSON payload in a payload field alone",
      );
    }
    if (payload !== null) {
      return { value: parseJson(payload, "the form field payload"), json: payload };
    }
    const fields = Object.fromEntries(form);
    return { value: fields, json: JSON.stringify(fields) };
  }
  return { value: parseJson(text, mediaType ? `body (${mediaType})` : "body"), json: text };
}

/** The start of a JSON object or array; no form field a sender builds starts this way. */
const JSON_START = /^\s*[[{]/;

/**
 * True when the percent-encoded bytes of a form body decode as UTF-8. A `%` not followed by two
 * hex digits is literal text, as URLSearchParams reads it.
 */
function isStrictFormUtf8(text: string): boolean {
  for (const pair of text.split("&")) {
    try {
      decodeURIComponent(pair.replace(STRAY_PERCENT, "%25"));
    } catch {
      return false;
    }
  }
  return true;
}

const STRAY_PERCENT = /%(?![0-9a-fA-F]{2})/g;

function parseJson(text: string, what: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new BodyError(400, `${what} is not valid JSON`);
  }
  if (tooDeep(value)) {
    throw new BodyError(400, `${what} is nested deeper than ${MAX_JSON_DEPTH} levels`);
  }
  return value;
}

/**
 * True when arrays and objects nest deeper than {@link MAX_JSON_DEPTH}. Walks the parsed
 * value with an explicit stack (V8's `JSON.parse` is iterative, so parsing a deep body is
 * safe; recursive code after it, like `JSON.stringify`, would not be).
 */
function tooDeep(root: unknown): boolean {
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (value === null || typeof value !== "object") continue;
    if (depth >= MAX_JSON_DEPTH) return true;
    for (const child of Array.isArray(value) ? value : Object.values(value)) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
    }
  }
  return false;
}
