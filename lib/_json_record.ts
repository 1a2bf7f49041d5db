/**
 * Reading untyped JSON (a payload, a platform's or an LLM endpoint's answer) one object at a
 * time.
 *
 * @module
 */

/**
 * `value` as an object of fields, when it is one.
 * @param value any parsed JSON value
 * @returns the object, or undefined for `null`, arrays and scalars
 */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}
