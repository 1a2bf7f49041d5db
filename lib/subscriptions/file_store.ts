/**
 * The dynamic subscription file `webhook_subscriptions.json` (docs/subscriptions.md): an object
 * keyed by subscription name, written atomically (temp file + rename) with mode 0600, under an
 * exclusive lock so that concurrent `subscribe` runs all persist. The gateway reads it through
 * `SubscriptionFileCache` (file_cache.ts). It is where the records live with the SQLite backend
 * (file_source.ts); with `state.backend: postgres` they live in the database (postgres_source.ts),
 * and callers reach either through source.ts.
 *
 * @module
 */
import { withFileLock, withoutByteOrderMark, writeFileAtomic } from "../config/fs.ts";
import { ConfigError } from "../errors.ts";
import {
  checkRecord,
  checkTargetAndScheme,
  currentSecret,
  NAME_PATTERN,
  type Route,
  type Subscription,
} from "./mod.ts";

/** The file's content: subscription records keyed by name. */
export type SubscriptionRecords = Record<string, Subscription>;

/**
 * Reads the subscription file.
 * @param path the file's path
 * @returns the records; an empty object when the file does not exist (and only then)
 * @throws ConfigError naming the file when it is not a JSON object of records, an empty file
 *   included (never replaced)
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
 * @param text the file's content
 * @param path the file, for the messages
 * @returns the records by name
 * @throws ConfigError naming the file when the text is not a JSON object of objects; an empty
 *   text (or only blanks) too: only a missing file stands for no subscriptions
 */
export function parseSubscriptions(text: string, path: string): SubscriptionRecords {
  const json = withoutByteOrderMark(text);
  // An emptied file (a crash mid-write, a full disk, `: > file`) is not "no subscriptions":
  // read as {}, the next command would write back only its own record, and every other
  // subscription and secret would be lost. Only a missing file means none yet.
  if (json.trim() === "") {
    throw new ConfigError(
      `${path} is corrupt: it is empty, where a JSON object keyed by subscription name is ` +
        "expected ({} when there are none); restore it from a backup or move it away",
      { file: path },
    );
  }
  let data: unknown;
  try {
    data = JSON.parse(json);
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
  return checkedRecords(Object.entries(data), path);
}

/**
 * Checks records read from where they live (the file, or the database's `subscriptions` table):
 * a record whose fields have the wrong type is kept as it was read, unchecked, for
 * {@link unusableSubscriptions} to report.
 * @param entries the records' names and parsed JSON, in order
 * @param where the file or table, for the messages
 * @returns the records by name
 * @throws ConfigError naming `where` when a record is not a JSON object
 */
export function checkedRecords(
  entries: Iterable<[string, unknown]>,
  where: string,
): SubscriptionRecords {
  const records: SubscriptionRecords = {};
  for (const [name, record] of entries) {
    if (record === null || typeof record !== "object" || Array.isArray(record)) {
      throw new ConfigError(`${where} is corrupt: subscription "${name}" is not an object`, {
        file: where,
      });
    }
    try {
      const fields = record as Record<string, unknown>;
      records[name] = checkRecord(fields, `subscription "${name}" in ${where}`, where);
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
 * The schemes whose senders send the secret itself as a header value (`X-Gitlab-Token`,
 * `Authorization: Bearer`), rather than signing with it (docs/signatures.md).
 */
export const HEADER_TOKEN_SCHEMES: readonly string[] = ["gitlab", "bearer"];

/**
 * Visible ASCII, with spaces inside only: what a header value can carry unchanged (RFC 9110
 * §5.5 field-value; senders and proxies drop or mangle the rest).
 */
export const HEADER_TOKEN = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/**
 * Why some senders can never authenticate to a route, whatever they send: it has no secret
 * (an empty one counts as none), so every request gets 403; or its secret has characters no
 * header can carry while GitLab and Bearer senders, which send it as a header, may be the ones
 * using it (every request of theirs gets 401). A route pinned to a scheme that signs with the
 * secret (`--auth github`) has no such problem with it, nor one with `auth: none`.
 * @param route the subscription or static route
 * @param globalSecret `extra.secret`, which serves static routes without a secret of their own
 * @returns the problem and what to do, to follow `subscription "<name>": `; undefined when
 *   every sender of its scheme can authenticate
 * @example
 * ```ts
 * secretProblem({ name: "gl", origin: "dynamic", secret: "gl-tökén" }, undefined);
 * // "its secret has characters no header can carry (...): GitLab and Bearer senders ..."
 * ```
 */
export function secretProblem(route: Route, globalSecret: string | undefined): string | undefined {
  if (route.auth === "none") return undefined; // no secret is asked for
  const secret = currentSecret(route, globalSecret);
  const dynamic = route.origin === "dynamic";
  const renew = dynamic
    ? `agent webhook rotate-secret ${route.name}`
    : "set its secret in config.yaml";
  if (secret === undefined) {
    return "it has no secret (an empty one counts as none), so every request is refused with " +
      `403; give it one: ${renew}`;
  }
  if (HEADER_TOKEN.test(secret)) return undefined;
  const uncarried = "its secret has characters no header can carry (outside ASCII, control " +
    "characters, or blanks at its ends)";
  if (route.auth !== undefined && HEADER_TOKEN_SCHEMES.includes(route.auth)) {
    return `${uncarried}, and ${route.auth} senders send it as a header, so every request is ` +
      `refused with 401; give it another: ${renew}`;
  }
  if (route.auth !== undefined) return undefined;
  const pin = dynamic
    ? `agent webhook subscribe ${route.name} --auth <scheme>`
    : "its auth in config.yaml";
  return `${uncarried}: GitLab and Bearer senders, which send it as a header, are always ` +
    `refused with 401. If its sender signs with it (GitHub, Stripe...), pin that scheme: ${pin}; ` +
    `else give it another: ${renew}`;
}

/**
 * The records of the subscription file whose secret some senders can never satisfy (see
 * {@link secretProblem}), which the gateway still serves: it says so in its log each time it
 * reads the file. Records it does not serve ({@link unusableSubscriptions}, or hidden by a
 * static route) are not named here.
 * @param records the file's records
 * @param path the file, for the messages
 * @param staticRoutes the routes of `config.yaml`
 * @returns one message per such record: `subscription "x" in <path>: it has no secret ...`
 */
export function secretWarnings(
  records: SubscriptionRecords,
  path: string,
  staticRoutes: ReadonlyMap<string, unknown>,
): string[] {
  const unusable = unusableSubscriptions(records, path, staticRoutes);
  return Object.entries(records).flatMap(([name, record]) => {
    if (staticRoutes.has(name) || unusable.has(name)) return [];
    const problem = secretProblem({ ...record, name, origin: "dynamic" }, undefined);
    return problem === undefined ? [] : [`subscription "${name}" in ${path}: ${problem}`];
  });
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
