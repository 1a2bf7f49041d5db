/**
 * Where the dynamic subscriptions live (docs/subscriptions.md#where-subscriptions-live): the
 * home's `webhook_subscriptions.json` with the SQLite state store, the database's
 * `subscriptions` table with `state.backend: postgres`. Both are a {@link SubscriptionSource}:
 * the commands, the dashboard and the gateway reach the records only through one, chosen by
 * {@link openSubscriptionSource}. Static routes stay in `config.yaml` whatever the backend.
 *
 * @module
 */
import type { Config } from "../config/mod.ts";
import { readYamlFile } from "../config/config_file.ts";
import { objectAt } from "../config/_typed_values.ts";
import { ConfigError, StoreUnavailableError } from "../errors.ts";
import type { SubscriptionRecords } from "./file_store.ts";
import { fileSubscriptionSource } from "./file_source.ts";
import { openPostgresSubscriptions, postgresWhere } from "./postgres_source.ts";

export type { SubscriptionRecords };

/**
 * The records of one place, read whole, changed atomically and watched.
 *
 * Implementations: the file (file_source.ts) and PostgreSQL (postgres_source.ts); both pass
 * the same conformance tests (tests/lib/subscriptions/source_conformance_test.ts).
 */
export interface SubscriptionSource {
  /**
   * Where the records are, for messages: the file's path, or
   * `PostgreSQL host:5432/name (table subscriptions)` (never the database's credentials).
   */
  readonly where: string;
  /**
   * Reads every record.
   * @returns the records by name; `{}` when there are none
   * @throws ConfigError when the file is corrupt or a stored record is not an object
   * @throws StoreUnavailableError when the database cannot be reached
   */
  read(): Promise<SubscriptionRecords>;
  /**
   * Read-modify-write that no concurrent writer (another command, another host) can interleave
   * with: `change` gets the current records, may mutate them, and what they hold afterwards is
   * stored; throwing from it stores nothing.
   * @returns what `change` returned
   * @throws as {@link read}; whatever `change` throws
   */
  update<T>(change: (records: SubscriptionRecords) => T | Promise<T>): Promise<T>;
  /**
   * Keeps a copy of the records in memory, read now and again on every change: what the gateway
   * serves requests from. A change made through any source of the same place shows in
   * `current()` within a second.
   * @throws as {@link read} for a database that cannot be reached at the start (a corrupt file
   *   is not thrown: `lastError` says it)
   */
  watch(options?: WatchOptions): Promise<SubscriptionWatch>;
  /** Closes the database connections, if any. A watch stops with it. */
  close(): Promise<void>;
}

/** What a {@link SubscriptionSource.watch} reports as it goes. */
export interface WatchOptions {
  /**
   * Called when a reload fails (with the error and the records still served), when it fails
   * differently, and when the records can be read again (with undefined), so a caller can say
   * so once rather than on every request.
   */
  onErrorChange?: (error: Error | undefined, records: SubscriptionRecords) => void;
  /** Called with the new records each time they are read anew and differ. */
  onReload?: (records: SubscriptionRecords) => void;
}

/** A copy of the records in memory, kept up to date. */
export interface SubscriptionWatch {
  /**
   * The records; the last good copy when a reload failed.
   * @param options `fresh`: look for a change now (the gateway asks for a name it does not know
   *   or a signature that does not verify); the file is read at once, the database soon after
   */
  current(options?: { fresh?: boolean }): SubscriptionRecords;
  /** Why the last reload failed, while it does. */
  readonly lastError: Error | undefined;
  /** Stops watching. */
  stop(): Promise<void>;
}

/**
 * What choosing the place takes from a loaded configuration: the home's files, and the merged
 * environment (`DATABASE_URL`) when the caller has it.
 */
export type SourceConfig = Pick<Config, "paths"> & Partial<Pick<Config, "env">>;

/** Where the subscriptions of a configuration live. */
export type SubscriptionPlace =
  | { kind: "file"; path: string }
  | { kind: "postgres"; url: string };

/**
 * Where the subscriptions live, by `state.backend` in `config.yaml`: `sqlite` (the default) keeps
 * them in the home's file, `postgres` in the database named by `DATABASE_URL` (process env or
 * `.env`) or else `state.url`.
 * @param config the loaded configuration
 * @returns the file's path, or the database's URL
 * @throws ConfigError when `state.backend` is neither, or `postgres` has no URL
 */
export async function subscriptionPlace(config: SourceConfig): Promise<SubscriptionPlace> {
  const { backend, url, file } = await stateSection(config);
  if (backend === "sqlite") return { kind: "file", path: config.paths.subscriptions };
  if (backend !== "postgres") {
    throw new ConfigError(
      `state.backend in ${file} must be sqlite or postgres, not ${JSON.stringify(backend)}`,
      { file },
    );
  }
  if (url === undefined) {
    throw new ConfigError(
      `state.backend in ${file} is postgres, but neither DATABASE_URL nor state.url names the ` +
        "database",
      { file },
    );
  }
  return { kind: "postgres", url };
}

/**
 * The PostgreSQL database a configuration names, whatever its `state.backend`: `DATABASE_URL`
 * (process env or `.env`), else `state.url` in `config.yaml`.
 * @param config the loaded configuration
 * @returns the connection URL; undefined when neither is set
 * @throws ConfigError when `config.yaml` cannot be read or its `state` is not a mapping
 */
export async function stateDatabaseUrl(config: SourceConfig): Promise<string | undefined> {
  return (await stateSection(config)).url;
}

/** `state.backend` and the database's URL, read from `config.yaml` and the environment. */
async function stateSection(
  config: SourceConfig,
): Promise<{ backend: unknown; url: string | undefined; file: string }> {
  const file = config.paths.config;
  const { data } = await readYamlFile(file);
  const state = objectAt(data, ["state"], file);
  const url = config.env?.DATABASE_URL || (typeof state.url === "string" ? state.url : "");
  return { backend: state.backend ?? "sqlite", url: url === "" ? undefined : url, file };
}

/**
 * Opens the source of a configuration's subscriptions (see {@link subscriptionPlace}).
 * @param config the loaded configuration
 * @param options `pollMs`: how often a database watch reads the records whatever it was told,
 *   in case a notification was missed (@default {5000})
 * @returns the source; close it with `close()`
 * @throws ConfigError as {@link subscriptionPlace}
 * @throws StoreUnavailableError when the database cannot be reached
 * @example
 * ```ts
 * const source = await openSubscriptionSource(config);
 * try {
 *   await source.update((records) => void delete records.gh);
 * } finally {
 *   await source.close();
 * }
 * ```
 */
export async function openSubscriptionSource(
  config: SourceConfig,
  options: { pollMs?: number } = {},
): Promise<SubscriptionSource> {
  const place = await subscriptionPlace(config);
  if (place.kind === "file") return fileSubscriptionSource(place.path);
  return await openPostgresSubscriptions(place.url, options);
}

/**
 * Runs `use` on the configuration's source, and closes it: for a command's single read or
 * update.
 * @returns what `use` returned
 * @throws as {@link openSubscriptionSource}; whatever `use` throws
 */
export async function withSubscriptions<T>(
  config: SourceConfig,
  use: (source: SubscriptionSource) => Promise<T>,
): Promise<T> {
  const source = await openSubscriptionSource(config);
  try {
    return await use(source);
  } finally {
    await source.close();
  }
}

/**
 * {@link SubscriptionSource.update} on the configuration's source.
 * @example
 * ```ts
 * const existed = await updateSubscriptionsOf(config, (records) => delete records.gh);
 * ```
 */
export function updateSubscriptionsOf<T>(
  config: SourceConfig,
  change: (records: SubscriptionRecords) => T | Promise<T>,
): Promise<T> {
  return withSubscriptions(config, (source) => source.update(change));
}

/** {@link SubscriptionSource.read} on the configuration's source. */
export function readSubscriptionsOf(config: SourceConfig): Promise<SubscriptionRecords> {
  return withSubscriptions(config, (source) => source.read());
}

/**
 * Like {@link readSubscriptionsOf}, for readers that can go on without the records: a file
 * that cannot be read or parsed, or a database that cannot be reached, gives its error (as a
 * ConfigError whose message says which) instead of throwing it.
 * @returns the records, or the ConfigError naming where they are
 */
export async function readSubscriptionsOrErrorOf(
  config: SourceConfig,
): Promise<SubscriptionRecords | ConfigError> {
  try {
    return await readSubscriptionsOf(config);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    if (error instanceof StoreUnavailableError) {
      return new ConfigError(error.message, { cause: error });
    }
    throw error;
  }
}

/**
 * Where a configuration's subscriptions are, for messages, without opening anything: the file's
 * path, or `PostgreSQL host:5432/name (table subscriptions)`.
 * @throws ConfigError as {@link subscriptionPlace}
 */
export async function subscriptionsWhere(config: SourceConfig): Promise<string> {
  const place = await subscriptionPlace(config);
  if (place.kind === "file") return place.path;
  return postgresWhere(place.url);
}
