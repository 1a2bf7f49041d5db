/**
 * Reading typed values out of parsed configuration (YAML, `.env`, process env). Each reader
 * throws a {@link ConfigError} that names the key and the file; none falls back silently.
 *
 * @module
 */
import { ConfigError } from "../errors.ts";

/** Where a value was read: the file (or "the process environment") and the key. */
export type Source = { file: string; key: string };

/**
 * The mapping at `keys` below `root`; empty when absent.
 * @param root the parsed YAML, or a mapping in it
 * @param keys the key path below `root`
 * @param file the file, for messages
 * @param under the key path of `root` itself in the file, for messages (e.g. `agent`)
 * @returns the mapping, or `{}` when a key on the way is absent or null
 * @throws ConfigError when a node on the way is not a mapping, naming its full key path
 * @example objectAt(yaml, ["platforms", "webhook"], "config.yaml") // { enabled: true, ... }
 */
export function objectAt(
  root: unknown,
  keys: string[],
  file: string,
  under: string[] = [],
): Record<string, unknown> {
  const path = [...under, ...keys];
  const notMapping = (depth: number) =>
    new ConfigError(
      `${
        path.slice(0, under.length + depth).join(".") || "the top level"
      } in ${file} must be a mapping`,
      { file },
    );
  let node = root;
  for (const [i, key] of keys.entries()) {
    if (node === undefined || node === null) return {};
    if (typeof node !== "object" || Array.isArray(node)) throw notMapping(i);
    node = (node as Record<string, unknown>)[key];
  }
  if (node === undefined || node === null) return {};
  if (typeof node !== "object" || Array.isArray(node)) throw notMapping(keys.length);
  return node as Record<string, unknown>;
}

const TRUE_WORDS = new Set(["true", "1", "yes", "on"]);
const FALSE_WORDS = new Set(["false", "0", "no", "off"]);

/**
 * Reads a boolean written as YAML boolean or one of true/false/1/0/yes/no/on/off.
 * @param value the value as parsed from YAML or the environment
 * @param from the key and file it came from, for the error message
 * @returns the boolean; undefined when the value is missing, null or empty
 * @throws ConfigError for anything else
 */
export function toBoolean(value: unknown, from: Source): boolean | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value === "boolean") return value;
  const word = String(value).trim().toLowerCase();
  if (TRUE_WORDS.has(word)) return true;
  if (FALSE_WORDS.has(word)) return false;
  throw new ConfigError(
    `${from.key} in ${from.file} must be true or false (or 1/0, yes/no, on/off), not ${
      JSON.stringify(value)
    }`,
    { file: from.file },
  );
}

/**
 * Reads a whole number within `range`.
 * @param value the value as parsed from YAML or the environment (a number or its text)
 * @param from the key and file it came from, for the error message
 * @param range the smallest and largest numbers allowed (@default {no bound})
 * @returns the number; undefined when the value is missing, null or empty
 * @throws ConfigError for anything else
 * @example
 * ```ts
 * const from = { file: "config.yaml", key: "platforms.webhook.extra.port" };
 * toInteger("8644", from, { min: 0, max: 65535 }); // 8644
 * toInteger(70000, from, { min: 0, max: 65535 }); // throws ConfigError: ... from 0 to 65535
 * ```
 */
export function toInteger(
  value: unknown,
  from: Source,
  range: { min?: number; max?: number },
): number | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  // Only a number or its text: String([2]) is "2", and a list is not a number.
  const text = typeof value === "number" || typeof value === "string" ? String(value).trim() : "";
  const number = /^-?\d+$/.test(text) ? Number(text) : NaN;
  const { min = -Infinity, max = Infinity } = range;
  if (!Number.isSafeInteger(number) || number < min || number > max) {
    const bounds = max === Infinity ? `at least ${min}` : `from ${min} to ${max}`;
    throw new ConfigError(
      `${from.key} in ${from.file} must be a whole number ${bounds}, not ${JSON.stringify(value)}`,
      { file: from.file },
    );
  }
  return number;
}

/**
 * Reads a string (a number is taken as its text).
 * @param value the value as parsed from YAML or the environment
 * @param from the key and file it came from, for the error message
 * @returns the text as written; undefined when the value is missing or null
 * @throws ConfigError for other types
 */
export function toText(value: unknown, from: Source): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string") return value;
  if (typeof value === "number") return String(value);
  throw new ConfigError(`${from.key} in ${from.file} must be a string`, { file: from.file });
}

/**
 * Reads the http(s) URL that paths are appended to (`public_url`, `base_url`), without its
 * trailing slashes.
 * @param value the value as parsed from YAML or the environment
 * @param from the key and file it came from, for the error message
 * @returns the URL without trailing slashes; undefined when the value is missing or empty
 * @throws ConfigError for anything else, and for a URL with a query or a fragment, which would
 *   end up in the middle of every URL made from it (`https://x/?a=1/webhooks/name`)
 */
export function toUrl(value: unknown, from: Source): string | undefined {
  const text = toText(value, from);
  if (!text) return undefined;
  if (!URL.canParse(text) || !/^https?:$/.test(new URL(text).protocol)) {
    throw new ConfigError(
      `${from.key} in ${from.file} must be an http(s) URL, not ${JSON.stringify(text)}`,
      { file: from.file },
    );
  }
  if (/[?#]/.test(text)) {
    throw new ConfigError(
      `${from.key} in ${from.file} must be a base URL without "?" or "#" (paths are added to ` +
        `its end), not ${JSON.stringify(text)}`,
      { file: from.file },
    );
  }
  return text.replace(/\/+$/, "");
}

/**
 * One warning per key of `section` that is not in `known`.
 * @param section a mapping read from `config.yaml`
 * @param where `path`: the section's dotted key, e.g. `platforms.webhook.extra`; `known`: the
 *   keys it takes; `file`: the path of `config.yaml`
 * @returns one sentence per unknown key, naming the keys the section takes
 */
export function unknownKeys(
  section: Record<string, unknown>,
  where: { path: string; known: readonly string[]; file: string },
): string[] {
  const { path, known, file } = where;
  return Object.keys(section).filter((key) => !known.includes(key)).map((key) =>
    `${path}.${key} in ${file} is not a setting and is ignored (a typo?); ${path} takes: ` +
    known.join(", ")
  );
}
