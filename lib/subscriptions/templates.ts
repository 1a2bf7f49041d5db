/**
 * The prompt template engine of docs/templates.md: `{dot.path}` placeholders rendered against a
 * parsed JSON payload, used for `--prompt` and for `deliver_extra` string values.
 *
 * The grammar in full (docs/templates.md describes it for users):
 *
 * - A placeholder is `{` path `}`. A path is one or more segments joined by single dots; a
 *   segment is one or more of `A-Z a-z 0-9 _ - $ @` or a Unicode letter, mark or digit. Anything
 *   else between braces (`{}`, `{ spaced }`, `{"json": 1}`, `{a..b}`, an unclosed `{`) is literal
 *   text and is not reported as missing.
 * - `{{` and `}}` are literal braces; a lone `}` is literal too.
 * - Paths are looked up as `valueAt` (payload.ts) does. In an object a segment is an own key
 *   (`Object.hasOwn`: `{constructor}` on `{}` is missing). When no own key matches, the segment
 *   joined with the following ones is tried, so a key that itself contains dots
 *   (`{"app.version": 2}`) is reachable as `{app.version}`; the shortest existing key wins and
 *   there is no backtracking. In an array only a decimal index (`0`, `12`, no sign, no leading
 *   zero) selects; `length` is missing. Strings, numbers and the other scalars have no fields,
 *   so a string or number payload only renders the specials.
 * - `\n` and `\t` (backslash then letter) become newline and tab; every other backslash is kept.
 *   There is no escape for a literal backslash-n.
 * - Substituted values are appended and never scanned again.
 *
 * Rendering is one pass over the template (a quantifier-free character class finds the next
 * `{`, `}` or `\`; paths are scanned by hand), linear in the template plus the values emitted.
 * JSON is written by a bounded printer that stops at the character limit, so a huge or deeply
 * nested payload costs at most the limit, never a full `JSON.stringify` or a stack overflow.
 *
 * @module
 */
import { boundedJson, CUT_MARKER } from "./_bounded_json.ts";
import { valueAt } from "./payload.ts";

/** What the special placeholders resolve to. */
export interface TemplateContext {
  /**
   * The event label: the type (docs/http.md), with `.<action>` when the payload has a string
   * `action` (`issues.opened`, `pipeline`, `payment_intent.succeeded`): `{__event__}`.
   */
  event: string;
  /** The subscription or static route name: `{__subscription__}`. */
  subscription: string;
  /** The delivery id (received or generated): `{__delivery_id__}`. */
  deliveryId: string;
}

/** The rendered text and the placeholders that could not be resolved. */
export interface RenderResult {
  /** The rendered text; unresolved placeholders are left as written (`{issue.nope}`). */
  text: string;
  /** Paths (without braces) that were not found, in order of first appearance, without repeats. */
  missing: string[];
}

/** Longest JSON text of an object or array value substituted for a placeholder, in characters. */
export const MAX_VALUE_CHARS = 2_000;
/** Longest JSON text of the whole payload (`{__raw__}`, the default prompt), in characters. */
export const MAX_RAW_CHARS = 4_000;
export { CUT_MARKER };

const OPEN = 0x7b; // {
const CLOSE = 0x7d; // }
const DOT = 0x2e;
const BACKSLASH = 0x5c;
const LETTER_N = 0x6e;
const LETTER_T = 0x74;
const NOT_FOUND = Symbol("not found");
const UNICODE_KEY_CHAR = /^[\p{L}\p{M}\p{N}]$/u;

/** One flag per ASCII code: may it appear in a path segment? */
const ASCII_KEY_CHAR = new Uint8Array(128).map((_, code) =>
  /[A-Za-z0-9_$@-]/.test(String.fromCharCode(code)) ? 1 : 0
);

/**
 * Renders a prompt template against a webhook payload (docs/templates.md).
 *
 * @param template The template text, e.g. `New issue {issue.title} by {issue.user.login}`.
 * @param payload The parsed JSON payload (any JSON value; usually an object).
 * @param context What `{__event__}`, `{__subscription__}` and `{__delivery_id__}` resolve to;
 *   when the payload has no `event_type` field, `{event_type}` is the event's type, `event`
 *   without its action (`issues` for `issues.opened`).
 * @returns The text, and the paths that were not found (left literally in the text). Never
 *   throws, whatever the template and payload.
 * @example
 * ```ts
 * const { text, missing } = renderTemplate(
 *   "New issue {issue.title} by {issue.user.login}{issue.nope}\\n{{done}}",
 *   { issue: { title: "Crash", user: { login: "octocat" } } },
 *   { event: "issues.opened", subscription: "gh", deliveryId: "d-1" },
 * );
 * // text: "New issue Crash by octocat{issue.nope}\n{done}"; missing: ["issue.nope"]
 * ```
 */
export function renderTemplate(
  template: string,
  payload: unknown,
  context: TemplateContext,
): RenderResult {
  const missing = new Set<string>();
  let text = "";
  let literalStart = 0; // literal text from here up to the current special is copied lazily
  // One character class without a quantifier cannot backtrack, and skips long literal text far
  // faster than a loop over `charCodeAt`. It is built per call: its `lastIndex` is state.
  const special = /[{}\\]/g;
  while (special.test(template)) {
    const i = special.lastIndex - 1;
    const code = template.charCodeAt(i);
    const next = template.charCodeAt(i + 1);
    if (code === BACKSLASH) {
      if (next !== LETTER_N && next !== LETTER_T) continue;
      text += template.slice(literalStart, i) + (next === LETTER_N ? "\n" : "\t");
      literalStart = special.lastIndex = i + 2;
    } else if (next === code) { // `{{` or `}}`
      text += template.slice(literalStart, i + 1);
      literalStart = special.lastIndex = i + 2;
    } else if (code === OPEN) {
      const end = scanPath(template, i + 1);
      if (end < 0 || template.charCodeAt(end) !== CLOSE) continue; // literal `{`
      const path = template.slice(i + 1, end);
      const value = resolvePlaceholder(path, payload, context);
      if (value === NOT_FOUND) {
        missing.add(path); // left in the pending literal text, braces included
      } else {
        text += template.slice(literalStart, i) + value;
        literalStart = end + 1;
      }
      special.lastIndex = end + 1;
    } // else a lone `}`: literal
  }
  text += template.slice(literalStart);
  return { text, missing: [...missing] };
}

/**
 * The prompt used when a subscription has no `--prompt` (docs/templates.md).
 *
 * The payload is printed as 2-space JSON cut at {@link MAX_RAW_CHARS} characters inside a
 * fenced `json` block. When the JSON itself contains a run of three or more backticks the fence is
 * made longer than that run (CommonMark), so a payload cannot close the block early.
 *
 * @param payload The parsed JSON payload.
 * @param context The event type and subscription name shown in the first line.
 * @returns `Webhook event '<type>' on subscription '<name>':` then a blank line and the block.
 */
export function defaultPrompt(payload: unknown, context: TemplateContext): string {
  const json = boundedJson(payload, MAX_RAW_CHARS);
  const fence = "`".repeat(Math.max(3, longestBacktickRun(json) + 1));
  return `Webhook event '${context.event}' on subscription '${context.subscription}':\n\n` +
    `${fence}json\n${json}\n${fence}`;
}

/**
 * Formats one payload value for substitution into a template.
 *
 * @param value A parsed JSON value.
 * @param maxChars Longest JSON text for an object or array, marker included (the engine uses
 *   {@link MAX_VALUE_CHARS}); strings are never cut.
 * @returns A string as-is; a number or boolean as JSON (`3`, `true`); `null` as `null`; an object
 *   or array as 2-space indented JSON, cut with {@link CUT_MARKER} when longer than `maxChars`;
 *   `undefined` (not a JSON value) as the empty string.
 */
export function formatValue(value: unknown, maxChars: number): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  return boundedJson(value, maxChars);
}

/** The end index of a well-formed path starting at `start`, or -1 when none starts there. */
function scanPath(template: string, start: number): number {
  let i = start;
  let segmentLength = 0;
  while (i < template.length) {
    const code = template.charCodeAt(i);
    if (code === DOT) {
      if (segmentLength === 0) return -1;
      segmentLength = 0;
      i++;
    } else if (code < 128) {
      if (ASCII_KEY_CHAR[code] === 0) break;
      segmentLength++;
      i++;
    } else {
      const char = String.fromCodePoint(template.codePointAt(i)!);
      if (!UNICODE_KEY_CHAR.test(char)) break;
      segmentLength++;
      i += char.length;
    }
  }
  return segmentLength === 0 ? -1 : i;
}

/** What `{path}` renders as: a special, the payload's value, or {@link NOT_FOUND}. */
function resolvePlaceholder(
  path: string,
  payload: unknown,
  context: TemplateContext,
): string | typeof NOT_FOUND {
  switch (path) {
    case "__raw__":
      return boundedJson(payload, MAX_RAW_CHARS);
    case "__event__":
      return context.event;
    case "__subscription__":
      return context.subscription;
    case "__delivery_id__":
      return context.deliveryId;
  }
  const value = valueAt(payload, path);
  if (path === "event_type" && value === undefined) return eventType(payload, context.event);
  return value === undefined ? NOT_FOUND : formatValue(value, MAX_VALUE_CHARS);
}

/**
 * The event type (docs/http.md) of an event labelled `label`: the label without the `.<action>`
 * it has when the payload has a string `action` (`issues` for `issues.opened`). A type may hold
 * dots itself (`payment_intent.succeeded`), so only that action is taken off.
 */
function eventType(payload: unknown, label: string): string {
  const action = typeof payload === "object" && payload !== null && Object.hasOwn(payload, "action")
    ? (payload as { action: unknown }).action
    : undefined;
  return typeof action === "string" && label.endsWith(`.${action}`)
    ? label.slice(0, -action.length - 1)
    : label;
}

/** The length of the longest run of backticks in `text`. */
function longestBacktickRun(text: string): number {
  let longest = 0;
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    run = text.charCodeAt(i) === 0x60 ? run + 1 : 0;
    if (run > longest) longest = run;
  }
  return longest;
}
