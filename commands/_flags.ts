/**
 * The command line flags of every command: `node:util` `parseArgs` in strict mode, with its
 * errors turned into usage errors that carry the command's usage text, and the readers of the
 * values flags take (whole numbers, comma-separated lists).
 *
 * @module
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { UsageError } from "../lib/errors.ts";

/**
 * `node:util` `parseArgs` in strict mode, with its errors turned into {@link UsageError}s
 * that carry the command's usage text.
 * @param argv the command's arguments, after its name (`["gh", "--events", "issues"]`)
 * @param options the flags it takes, as `parseArgs` describes them
 * @param usage the command's usage text, appended to every error
 * @returns `values`: each flag given, by name (`--no-x` as `x: false`); `positionals`: the rest
 * @throws UsageError for an unknown flag, a missing value, or a flag given twice (`--x --no-x`
 *   included); the caller checks the number of positionals
 * @example
 * ```ts
 * const { values, positionals } = parseFlags(["gh", "--events", "issues", "--no-deliver-only"], {
 *   events: { type: "string" },
 *   "deliver-only": { type: "boolean" },
 * }, usage);
 * // values: { events: "issues", "deliver-only": false }; positionals: ["gh"]
 * ```
 */
export function parseFlags<T extends NonNullable<ParseArgsConfig["options"]>>(
  argv: string[],
  options: T,
  usage: string,
) {
  let parsed;
  try {
    // allowNegative: `--no-deliver-only` turns a boolean option back off on update.
    parsed = parseArgs({
      args: joinNegativeValues(argv, options),
      options,
      allowPositionals: true,
      allowNegative: true,
      strict: true,
      tokens: true,
    });
  } catch (error) {
    throw new UsageError(`${explainParseError(error as Error, options)}\n\n${usage}`);
  }
  // parseArgs keeps the last of a flag given twice: `--events a --events b` would drop `a`
  // unsaid, and `--deliver-only --no-deliver-only` would depend on the order.
  const given = new Map<string, string[]>();
  for (const token of parsed.tokens) {
    if (token.kind !== "option") continue;
    // Deno's parseArgs names `--no-x` "no-x" (Node's names it "x").
    const name = !Object.hasOwn(options, token.name) && token.name.startsWith("no-")
      ? token.name.slice(3)
      : token.name;
    if (options[name]?.multiple) continue;
    given.set(name, [...given.get(name) ?? [], token.rawName]);
  }
  for (const [name, forms] of given) {
    if (forms.length < 2) continue;
    const list = LIST_FLAGS.has(name) ? " (a list is comma-separated: a,b)" : "";
    throw new UsageError(
      `--${name} is given ${forms.length} times (${forms.join(", ")}): give it once${list}` +
        `\n\n${usage}`,
    );
  }
  return { values: parsed.values, positionals: parsed.positionals };
}

/** The flags that take a comma-separated list. */
const LIST_FLAGS = new Set(["events", "skills"]);

/**
 * A whole number written in decimal digits, as flags take them.
 * @param text the flag's value
 * @returns the number, or NaN for anything else (`1e3`, `0x10`, `-1`, `1.5`, blanks), which
 *   `Number()` would take
 */
export function wholeNumber(text: string): number {
  return /^\d+$/.test(text) ? Number(text) : NaN;
}

/**
 * parseArgs's message for an unknown option, in our words and with the closest option it may
 * have meant (`--event` → `--events`); other messages as they are.
 */
function explainParseError(error: Error, options: ParseArgsConfig["options"]): string {
  const unknown = error.message.match(/^Unknown option '(--?[^']+)'/)?.[1];
  if (unknown === undefined) return error.message;
  const given = unknown.replace(/^-+/, "").split("=")[0];
  const names = Object.keys(options ?? {});
  const closest = names
    .map((name) => ({ name, distance: editDistance(given, name) }))
    .sort((a, b) => a.distance - b.distance)[0];
  return closest && closest.distance <= 2
    ? `Unknown option ${unknown}. Did you mean --${closest.name}?`
    : `Unknown option ${unknown}.`;
}

/** Levenshtein distance between two short strings: the edits that turn `a` into `b`. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j] + 1,
        current[j - 1] + 1,
        previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length];
}

/**
 * Joins a string option and a value that starts with `-` and a digit into `--name=value`:
 * parseArgs takes `-1001234567890` (a Telegram group's chat id) for an option and refuses
 * `--deliver-chat-id -1001234567890` as ambiguous.
 */
function joinNegativeValues(argv: string[], options: ParseArgsConfig["options"]): string[] {
  const joined: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--") return [...joined, ...argv.slice(i)];
    const name = argv[i].startsWith("--") ? argv[i].slice(2) : "";
    const next = argv[i + 1];
    if (options?.[name]?.type === "string" && next !== undefined && /^-\d/.test(next)) {
      joined.push(`${argv[i]}=${next}`);
      i++;
    } else {
      joined.push(argv[i]);
    }
  }
  return joined;
}

/**
 * Splits a comma-separated option into trimmed, non-empty items.
 * @param value the flag's value, if given
 * @returns the items (`"a, b,,"` → `["a", "b"]`), or undefined when the flag was not given
 */
export function commaList(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return value.split(",").map((item) => item.trim()).filter((item) => item !== "");
}
