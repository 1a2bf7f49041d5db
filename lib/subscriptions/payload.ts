/**
 * A webhook payload as the gateway reads it: parsed JSON of any shape, with integers past 2^53
 * kept as written, read one object at a time and by dot path (docs/templates.md).
 *
 * @module
 */

/**
 * `JSON.rawJSON` and `JSON.isRawJSON` (V8 has them; TypeScript's library does not yet): a number
 * kept as its JSON text, so one over 2^53 prints as written, not rounded.
 * https://github.com/tc39/proposal-json-parse-with-source
 */
export const RawJson = JSON as unknown as {
  rawJSON(text: string): { readonly rawJSON: string };
  isRawJSON(value: unknown): value is { readonly rawJSON: string };
};

/**
 * A `JSON.parse` reviver that keeps, as its JSON text, each integer a double cannot hold as
 * written (beyond 2^53). A number beyond a double's range (`1e400`) stays infinite, and prints
 * as `null`, as JSON has no other way to print it.
 * @param _key the member's key (unused)
 * @param value the value `JSON.parse` made
 * @param context the value's JSON text, which V8 gives revivers
 *   (https://github.com/tc39/proposal-json-parse-with-source)
 * @returns the value, or for such an integer a `JSON.rawJSON` of its text, which
 *   `JSON.stringify` and the templates print as written
 * @example
 * ```ts
 * const payload = JSON.parse('{"id": 12345678901234567891}', keepExactNumber);
 * JSON.stringify(payload); // '{"id":12345678901234567891}', not ...567000
 * ```
 */
export function keepExactNumber(
  _key: string,
  value: unknown,
  context?: { source?: string },
): unknown {
  return typeof value === "number" && Number.isInteger(value) && !Number.isSafeInteger(value) &&
      context?.source !== undefined
    ? RawJson.rawJSON(context.source)
    : value;
}

/**
 * `value` as an object of fields, when it is one: how untyped JSON (a payload, a platform's or
 * an LLM endpoint's answer) is read one object at a time.
 * @param value any parsed JSON value
 * @returns the object, or undefined for `null`, arrays and scalars
 * @example
 * ```ts
 * const issue = asRecord(asRecord(payload)?.issue);
 * const title = typeof issue?.title === "string" ? issue.title : undefined;
 * ```
 */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}

/**
 * The value at a dot path of a parsed JSON payload, found as a template's `{path}` finds it:
 * through own keys only (never `constructor` or a prototype's), array indexes (`0`, `17`: no
 * sign, no leading zero), and keys that hold dots (`{"app.version": 2}` at `app.version`; the
 * shortest existing key wins, without backtracking).
 * @param root the payload
 * @param path e.g. `repository.full_name` or `commits.0.id`
 * @returns the value, or undefined when any step is missing
 * @example
 * ```ts
 * valueAt({ commits: [{ id: "a1" }] }, "commits.0.id"); // "a1"
 * valueAt({}, "constructor"); // undefined
 * ```
 */
export function valueAt(root: unknown, path: string): unknown {
  let current = root;
  for (let start = 0, end = 0; end < path.length; start = end + 1) {
    end = segmentEnd(path, start);
    if (Array.isArray(current)) {
      const index = arrayIndex(path, start, end);
      if (index < 0 || index >= current.length) return undefined;
      current = current[index];
    } else if (typeof current === "object" && current !== null) {
      let key = path.slice(start, end);
      while (!Object.hasOwn(current, key)) {
        if (end === path.length) return undefined;
        end = segmentEnd(path, end + 1);
        key = path.slice(start, end);
      }
      current = (current as Record<string, unknown>)[key];
    } else {
      return undefined;
    }
  }
  return current;
}

/** Where the path segment starting at `start` ends: the next dot, or the path's end. */
function segmentEnd(path: string, start: number): number {
  const dot = path.indexOf(".", start);
  return dot < 0 ? path.length : dot;
}

/** Parses `path[start, end)` as a canonical decimal index (`0`, `17`); -1 for anything else. */
function arrayIndex(path: string, start: number, end: number): number {
  if (end - start > 15 || (end - start > 1 && path.charCodeAt(start) === 0x30)) return -1;
  let index = 0;
  for (let i = start; i < end; i++) {
    const digit = path.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return -1;
    index = index * 10 + digit;
  }
  return index;
}
