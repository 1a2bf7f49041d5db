/**
 * Telling a corrupt database file from other failures, and what to tell the operator then.
 *
 * @module
 */
import { errorMessage } from "../../errors.ts";

/**
 * SQLite's primary result codes for a file that is not a sound database: SQLITE_CORRUPT (11)
 * and SQLITE_NOTADB (26). https://sqlite.org/rescode.html
 */
const CORRUPT = new Set([11, 26]);

/**
 * SQLite's message when `error`, or an error it was caused by, says the file is corrupt.
 * @param error what a database call threw
 * @returns the message, or undefined for any other failure (a lock, a full disk)
 */
export function corruption(error: unknown): string | undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    const code = (cause as { errcode?: unknown }).errcode;
    if (typeof code === "number" && CORRUPT.has(code & 0xff)) return cause.message;
  }
  return undefined;
}

/**
 * What to do about a corrupt state database, for error messages.
 * @param path the database file
 * @returns one sentence naming the file and the ways out
 */
export function corruptionAdvice(path: string): string {
  return `${path} is corrupt: restore a backup, or salvage what it holds with sqlite3 ` +
    `(".recover", which needs a sqlite3 with the dbpage table, or ".dump"); see docs/running.md`;
}

/**
 * The message of a failed database call: SQLite's words, and {@link corruptionAdvice} when they
 * say the file is corrupt.
 * @param error what the call threw
 * @param path the database file
 * @returns the message
 */
export function databaseErrorText(error: unknown, path: string): string {
  const advice = corruption(error) === undefined ? "" : `. ${corruptionAdvice(path)}`;
  return errorMessage(error) + advice;
}
