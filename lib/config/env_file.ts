/**
 * Editing the home folder's `.env` (`KEY=value` lines): set keys in place, keep every other
 * line and comment, write atomically with mode 0600 (CONTRACT §1).
 *
 * @module
 */
import { withFileLock, writeFileAtomic } from "./fs.ts";
import { ConfigError } from "../errors.ts";

const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Sets `values` in the `.env` file at `path`, replacing existing assignments of the same keys
 * and appending new ones. The file is created (and an existing one narrowed) to mode 0600.
 * Runs under `.env.lock`, so edits made at the same time all land.
 * @param path the `.env` file
 * @param values keys and their new values; values with spaces, `#` or quotes are quoted
 * @throws TypeError for a key that is not a valid variable name or a value with a newline
 */
export async function setEnvValues(path: string, values: Record<string, string>): Promise<void> {
  for (const [key, value] of Object.entries(values)) {
    if (!KEY.test(key)) throw new TypeError(`Not a valid variable name: ${key}`);
    if (/[\r\n]/.test(value)) throw new TypeError(`The value of ${key} must be on one line`);
  }
  await withFileLock(path, () => setUnlocked(path, values));
}

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
