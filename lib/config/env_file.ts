/**
 * The home folder's `.env` (`KEY=value` lines, docs/configuration.md): read with `node:util`
 * `parseEnv`, a missing file as empty; edited by setting keys in place, keeping every other
 * line and comment, written atomically with mode 0600.
 *
 * @module
 */
import { parseEnv } from "node:util";
import { withFileLock, withoutByteOrderMark, writeFileAtomic } from "./fs.ts";
import { ConfigError } from "../errors.ts";

/**
 * Reads `.env` with `node:util` `parseEnv`; a missing file is empty, and a leading byte-order
 * mark is dropped.
 * @param path the `.env` file
 * @returns its variables
 * @throws ConfigError when the file cannot be read, or has a line that is not `KEY=value`
 * @example
 * ```ts
 * // .env: TELEGRAM_BOT_TOKEN=123:abc
 * //       export SLACK_HOME_CHANNEL="C0123"  # a comment
 * await readEnvFile(paths.envFile);
 * // { TELEGRAM_BOT_TOKEN: "123:abc", SLACK_HOME_CHANNEL: "C0123" }
 * ```
 */
export async function readEnvFile(path: string): Promise<Record<string, string>> {
  let text: string;
  try {
    text = withoutByteOrderMark(await Deno.readTextFile(path));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return {};
    throw new ConfigError(`Cannot read ${path}: ${(error as Error).message}`, {
      file: path,
      cause: error,
    });
  }
  checkEnvLines(text, path);
  return parseEnv(text) as Record<string, string>;
}

// Any name parseEnv takes (`my.key`, `MY-KEY`): the check is only for a missing "=".
const ENV_ASSIGNMENT = /^\s*(?:export\s+)?[^=#\s][^=]*=(.*)$/;

/**
 * Refuses a `.env` line that is neither blank, a `#` comment nor `KEY=value` (a quoted value may
 * run over several lines): `parseEnv` skips such a line without a word, so `TOKEN 123` (the `=`
 * forgotten) would leave the variable unset and surface much later as "TOKEN is not set".
 * The line's text is not quoted: it may hold a secret.
 * @throws ConfigError naming the file and the line number
 */
function checkEnvLines(text: string, path: string): void {
  let closing: string | undefined; // the quote that ends a value spanning lines
  text.split(/\r?\n/).forEach((line, index) => {
    if (closing !== undefined) {
      if (line.includes(closing)) closing = undefined;
      return;
    }
    if (line.trim() === "" || line.trimStart().startsWith("#")) return;
    const value = line.match(ENV_ASSIGNMENT)?.[1].trimStart();
    if (value === undefined) {
      throw new ConfigError(
        `${path} line ${index + 1} is not KEY=value (is the "=" missing?); fix or remove it`,
        { file: path },
      );
    }
    const quote = value[0];
    if ((quote === '"' || quote === "'" || quote === "`") && !value.slice(1).includes(quote)) {
      closing = quote;
    }
  });
}

const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Sets `values` in the `.env` file at `path`, replacing existing assignments of the same keys
 * and appending new ones. The file is created (and an existing one narrowed) to mode 0600.
 * Runs under `.env.lock`, so edits made at the same time all land.
 * @param path the `.env` file
 * @param values keys and their new values; values with spaces, `#` or quotes are quoted
 * @throws TypeError for a key that is not a valid variable name or a value with a newline
 * @throws ConfigError naming the file when it cannot be read or written
 * @example
 * ```ts
 * await setEnvValues(paths.envFile, { TELEGRAM_HOME_CHANNEL: "-100123", SLACK_BOT_TOKEN: "x y" });
 * // .env gains (or has replaced): TELEGRAM_HOME_CHANNEL=-100123 and SLACK_BOT_TOKEN='x y'
 * ```
 */
export async function setEnvValues(path: string, values: Record<string, string>): Promise<void> {
  for (const [key, value] of Object.entries(values)) {
    if (!KEY.test(key)) throw new TypeError(`Not a valid variable name: ${key}`);
    if (/[\r\n]/.test(value)) throw new TypeError(`The value of ${key} must be on one line`);
  }
  await withFileLock(path, () => setUnlocked(path, values));
}

/** {@link setEnvValues} once the lock is held. */
async function setUnlocked(path: string, values: Record<string, string>): Promise<void> {
  let lines: string[] = [];
  try {
    lines = (await Deno.readTextFile(path)).split("\n");
    if (lines.at(-1) === "") lines.pop();
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) {
      throw new ConfigError(`Cannot read ${path}: ${(error as Error).message}`, { file: path });
    }
  }
  const pending = new Map(Object.entries(values));
  lines = lines.map((line) => {
    const key = line.match(/^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=/)?.[1];
    if (!key || !pending.has(key)) return line;
    const value = pending.get(key)!;
    pending.delete(key);
    return `${key}=${quote(value)}`;
  });
  for (const [key, value] of pending) lines.push(`${key}=${quote(value)}`);
  await writeFileAtomic(path, lines.join("\n") + "\n");
}

/** Plain when safe, else the first dotenv quote (literal inside) the value does not contain. */
function quote(value: string): string {
  if (/^[A-Za-z0-9_./:@+-]*$/.test(value)) return value;
  const mark = ["'", '"', "`"].find((q) => !value.includes(q));
  if (!mark) throw new TypeError("A value cannot contain all of ', \" and ` in .env");
  return `${mark}${value}${mark}`;
}
