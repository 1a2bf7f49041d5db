/**
 * The dynamic subscription file `webhook_subscriptions.json` (docs/subscriptions.md): an object
 * keyed by subscription name, written atomically (temp file + rename) with mode 0600, under an
 * exclusive lock so that concurrent `subscribe` runs all persist. The gateway reads it through
 * `SubscriptionFileCache` (file_cache.ts).
 *
 * @module
 */
import { withFileLock, withoutByteOrderMark, writeFileAtomic } from "../config/fs.ts";
import { ConfigError } from "../errors.ts";
import { checkRecord, checkTargetAndScheme, NAME_PATTERN, type Subscription } from "./mod.ts";

/** The file's content: subscription records keyed by name. */
export type SubscriptionRecords = Record<string, Subscription>;

/**
 * Reads the subscription file.
 * @param path the file's path
 * @returns the records; an empty object when the file does not exist
 * @throws ConfigError naming the file when it is not a JSON object of records (never replaced)
 */
export async function readSubscriptions(path: string): Promise<SubscriptionRecords> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return {};
    throw new ConfigError(`Cannot read ${path}: ${(error as Error).message}`, { file: path });
  }
  return parseSubscriptions(text, path);
}

/**
 * The records of a file edited by hand whose fields have the wrong type (`"events": "push"`),
 * with `checkRecord`'s message. Such a record stays in the records as it was read, so that a
 * command rewriting the file writes it back unchanged, and {@link unusableSubscriptions} names
 * it: the gateway refuses its requests and serves the others.
 */
const wrongTypes = new WeakMap<object, string>();

/**
 * Why a record read by {@link parseSubscriptions} was kept unchecked.
 * @param record a record of the parsed file
 * @returns `checkRecord`'s message naming the field of the wrong type, or undefined when the
 *   record's fields passed
 */
export function wrongFieldType(record: Subscription): string | undefined {
  return wrongTypes.get(record);
}

/**
 * Parses the subscription file's text. A record whose fields have the wrong type is kept as it
 * was read, unchecked: {@link unusableSubscriptions} reports it.
 * @throws ConfigError naming the file when the text is not a JSON object of objects
 */
export function parseSubscriptions(text: string, path: string): SubscriptionRecords {
  let data: unknown;
  try {
    const json = withoutByteOrderMark(text);
    data = json.trim() === "" ? {} : JSON.parse(json);
  } catch (error) {
    // V8's message quotes the text around the error, which may be a secret: keep only where.
    const where = (error as Error).message.match(/line \d+ column \d+|position \d+/)?.[0];
    throw new ConfigError(
      `${path} is corrupt (not valid JSON${where ? ` at ${where}` : ""}); fix it or move it ` +
        "away",
      { file: path },
    );
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw new ConfigError(`${path} is corrupt: expected a JSON object keyed by subscription name`, {
      file: path,
    });
  }
  const records: SubscriptionRecords = {};
  for (const [name, record] of Object.entries(data)) {
    if (record === null || typeof record !== "object" || Array.isArray(record)) {
      throw new ConfigError(`${path} is corrupt: subscription "${name}" is not an object`, {
        file: path,
      });
    }
    try {
      records[name] = checkRecord(record, `subscription "${name}" in ${path}`, path);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      wrongTypes.set(record, error.message);
      records[name] = record as Subscription;
    }
  }
  return records;
}

/**
 * The records of a subscription file edited by hand that the gateway cannot serve: a name that
 * breaks the naming rule, a field of the wrong type, a `deliver` that names no target, an `auth`
 * that names no scheme. Such a record does not make the file unreadable (the others are served,
 * and commands can still change them); the gateway refuses its requests (404) and says why in
 * its log, and `webhook list` and `webhook test` say so too.
 * @param records the file's records
 * @param path the file, for the messages
 * @param staticRoutes the routes of `config.yaml`: a record one of them hides is never served,
 *   whatever it holds, so it is not named here
 * @returns the problem of each such record, by name: `subscription "x" in <path>: deliver:
 *   unknown target "y"; valid targets: ...`
 */
export function unusableSubscriptions(
  records: SubscriptionRecords,
  path: string,
  staticRoutes: ReadonlyMap<string, unknown>,
): Map<string, string> {
  const problems = new Map<string, string>();
  for (const [name, record] of Object.entries(records)) {
    if (staticRoutes.has(name)) continue;
    const where = `subscription "${name}" in ${path}`;
    if (!NAME_PATTERN.test(name)) {
      problems.set(name, `${where}: the name must match ${NAME_PATTERN.source}`);
      continue;
    }
    const wrongType = wrongTypes.get(record);
    if (wrongType !== undefined) {
      problems.set(name, wrongType);
      continue;
    }
    try {
      checkTargetAndScheme(record, (field) => `${where}: ${field}`, path);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      problems.set(name, error.message);
    }
  }
  return problems;
}

/**
 * Like {@link readSubscriptions}, for commands that can go on without the file: one that cannot
 * be read or parsed gives its error instead of throwing it.
 * @param path the file's path
 * @returns the records ({} when the file does not exist), or the ConfigError naming the file
 */
export async function readSubscriptionsOrError(
  path: string,
): Promise<SubscriptionRecords | ConfigError> {
  try {
    return await readSubscriptions(path);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
}

/**
 * Read-modify-write of the subscription file under an exclusive lock
 * (`webhook_subscriptions.json.lock`, flock). The new content is written to a temp file with
 * mode 0600 and renamed over the old one, so readers never see a half-written file.
 * @param path the file's path; its folder is created (0700) when missing
 * @param change receives the current records and returns the result to pass back; it may
 *   mutate the records. Throwing from it leaves the file untouched.
 * @returns what `change` returned
 * @throws ConfigError when the current file is corrupt (it is left as it is), or cannot be
 *   read or written; whatever `change` throws
 * @example
 * ```ts
 * const existed = await updateSubscriptions(paths.subscriptions, (records) => {
 *   const had = Object.hasOwn(records, "gh");
 *   records.gh = { ...records.gh, events: ["issues"] };
 *   return had;
 * });
 * ```
 */
export async function updateSubscriptions<T>(
  path: string,
  change: (records: SubscriptionRecords) => T | Promise<T>,
): Promise<T> {
  return await withFileLock(path, async () => {
    const records = await readSubscriptions(path);
    const result = await change(records);
    await writeFileAtomic(path, JSON.stringify(records, null, 2) + "\n");
    return result;
  });
}
