/**
 * The dynamic subscription file `webhook_subscriptions.json` (CONTRACT §1, §3): an object keyed
 * by subscription name, written atomically (temp file + rename) with mode 0600, under an
 * exclusive lock so that concurrent `subscribe` runs all persist.
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
 * @throws ConfigError when the current file is corrupt (it is left as it is)
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

/** How long {@link SubscriptionFileCache} trusts its copy before it stats the file again. */
export const SUBSCRIPTION_RECHECK_MS = 100;

/**
 * Keeps the parsed subscription file in memory and re-reads it when it changes, judged by
 * inode, size and mtime. Used by the gateway on every request, so the file is stat-ed at most
 * once per `recheckMs` (a `stat` per request was 5% of the ingest path's time), or at once
 * when a caller asks for a fresh copy: the gateway does for a name it does not know and for a
 * signature that does not verify, so a subscription or secret is honoured as soon as the
 * command that wrote it has returned.
 */
export class SubscriptionFileCache {
  #path: string;
  #recheckMs: number;
  #now: () => number;
  #checkedAtMs = -Infinity;
  #stamp = "";
  #records: SubscriptionRecords = {};
  #error: ConfigError | undefined;
  #onErrorChange:
    | ((error: ConfigError | undefined, records: SubscriptionRecords) => void)
    | undefined;
  #onReload: ((records: SubscriptionRecords) => void) | undefined;

  /**
   * @param path the subscription file
   * @param options `recheckMs`: how long a copy is trusted, in milliseconds
   *   (@default {100}); `now`: the clock, in milliseconds (@default {performance.now});
   *   `onErrorChange`: called when a reload finds the file unreadable (with the error and the
   *   records still served), when it finds a different error, and when the file is readable
   *   again (with undefined), so the gateway can say so once rather than on every request;
   *   `onReload`: called with the new records each time the file is read anew (or found gone),
   *   before `current()` returns them
   */
  constructor(
    path: string,
    options: {
      recheckMs?: number;
      now?: () => number;
      onErrorChange?: (error: ConfigError | undefined, records: SubscriptionRecords) => void;
      onReload?: (records: SubscriptionRecords) => void;
    } = {},
  ) {
    this.#path = path;
    this.#recheckMs = options.recheckMs ?? SUBSCRIPTION_RECHECK_MS;
    this.#now = options.now ?? (() => performance.now());
    this.#onErrorChange = options.onErrorChange;
    this.#onReload = options.onReload;
  }

  /**
   * The current records. A file that became corrupt keeps the last good records and sets
   * {@link lastError}, so a bad edit never takes the running gateway down.
   * @param options `fresh`: stat the file now even when the copy is younger than `recheckMs`
   */
  current(options: { fresh?: boolean } = {}): SubscriptionRecords {
    const nowMs = this.#now();
    if (!options.fresh && nowMs - this.#checkedAtMs < this.#recheckMs) return this.#records;
    this.#checkedAtMs = nowMs;
    let stamp: string;
    try {
      const info = Deno.statSync(this.#path);
      stamp = `${info.ino}:${info.size}:${info.mtime?.getTime()}`;
    } catch {
      stamp = "absent";
    }
    if (stamp === this.#stamp) return this.#records;
    this.#stamp = stamp;
    if (stamp === "absent") {
      this.#records = {};
      this.#onReload?.(this.#records);
      this.#setError(undefined);
      return this.#records;
    }
    try {
      this.#records = parseSubscriptions(Deno.readTextFileSync(this.#path), this.#path);
      this.#onReload?.(this.#records);
      this.#setError(undefined);
    } catch (error) {
      this.#setError(
        error instanceof ConfigError
          ? error
          : new ConfigError(`Cannot read ${this.#path}: ${(error as Error).message}`),
      );
    }
    return this.#records;
  }

  #setError(error: ConfigError | undefined): void {
    const changed = error?.message !== this.#error?.message;
    this.#error = error;
    if (changed) this.#onErrorChange?.(error, this.#records);
  }

  /** The error of the last reload, if the file on disk is currently unreadable. */
  get lastError(): ConfigError | undefined {
    return this.#error;
  }
}
