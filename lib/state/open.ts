/**
 * Opens the state store a configuration names (`state.backend`, docs/configuration.md#state):
 * the home's SQLite file, or the PostgreSQL database that several gateways share
 * (docs/scaling.md). The gateway and every command that reads or writes events open it here.
 *
 * @module
 */
import { resolve } from "node:path";
import type { Config } from "../config/mod.ts";
import { ConfigError } from "../errors.ts";
import type { StateStore } from "./mod.ts";
import { openPostgresStore } from "./postgres/mod.ts";
import { openStateStore as openSqliteStore, type SqliteStoreOptions } from "./sqlite/mod.ts";

/** What opening the store takes besides the configuration. */
export interface OpenStateOptions {
  /** The clock of what the store timestamps itself, in ms since the epoch. @default Date.now */
  now?: () => number;
  /**
   * Settings that only SQLite has (the busy timeout, checkpoints on a thread, what to do when
   * the file is corrupt); a PostgreSQL store ignores them.
   */
  sqlite?: Pick<SqliteStoreOptions, "busyTimeoutMs" | "backgroundCheckpoints" | "onCorrupt">;
  /**
   * Given by `gateway run`, not by a command: on PostgreSQL the store keeps the gateway's
   * heartbeat row, and `ingest` says whether it takes webhooks (rate limits divide by those,
   * docs/scaling.md#rate-limits); `id` is its id when `state.gateway_id` names none.
   */
  gateway?: { ingest: boolean; id?: string };
}

/**
 * Opens the configuration's state store: SQLite at `config.paths.stateDb`, or PostgreSQL at
 * `config.state.url` with its pool size, lease, connect timeout, TLS authority and gateway id.
 * @param config the loaded configuration: `state`, the home's paths, and the idempotency and
 *   conversation windows of `platforms.webhook`
 * @param options the clock, and SQLite's own settings (see {@link OpenStateOptions})
 * @returns the store; close it with `close()`
 * @throws ConfigError when `state.backend` is postgres and neither `DATABASE_URL` nor
 *   `state.url` names the database, or `state.tls_ca_file` cannot be read
 * @throws StoreUnavailableError when the database cannot be opened or reached; the message
 *   names the host, port and database, never the URL's password
 * @example A command's store
 * ```ts
 * const store = await openStateStore(config, { sqlite: { backgroundCheckpoints: false } });
 * try {
 *   console.log(await store.listEvents({ limit: 5 }));
 * } finally {
 *   await store.close();
 * }
 * ```
 */
export async function openStateStore(
  config: Pick<Config, "state" | "paths" | "webhook">,
  options: OpenStateOptions = {},
): Promise<StateStore> {
  const { state, paths, webhook } = config;
  const common = {
    idempotencyTtlSeconds: webhook.idempotencyTtlSeconds,
    sessionTtlSeconds: webhook.sessionTtlSeconds,
    ...(options.now === undefined ? {} : { now: options.now }),
  };
  if (state.backend === "sqlite") {
    return openSqliteStore(paths.stateDb, { ...common, ...options.sqlite });
  }
  if (state.url === undefined) {
    throw new ConfigError(
      `state.backend in ${paths.config} is postgres, but neither DATABASE_URL (in the ` +
        `environment or ${paths.envFile}) nor state.url names the database`,
      { file: paths.config },
    );
  }
  const tlsCaPem = state.tlsCaFile === undefined
    ? undefined
    : await readCa(resolve(paths.home, state.tlsCaFile), paths.config);
  return await openPostgresStore(state.url, {
    ...common,
    poolSize: state.poolSize,
    leaseSeconds: state.leaseSeconds,
    connectTimeoutSeconds: state.connectTimeoutSeconds,
    ...(options.gateway === undefined ? {} : { gateway: { ingest: options.gateway.ingest } }),
    ...gatewayIdOf(state.gatewayId ?? options.gateway?.id),
    ...(tlsCaPem === undefined ? {} : { tlsCaPem }),
  });
}

/**
 * The backend a configuration names, as a user reads it in a message: `SQLite <path>` or
 * `PostgreSQL` (the URL holds a password: not repeated).
 * @param config the loaded configuration
 * @returns the description
 */
export function stateStoreName(config: Pick<Config, "state" | "paths">): string {
  return config.state.backend === "sqlite"
    ? `SQLite ${config.paths.stateDb}`
    : `PostgreSQL (${config.state.urlFrom?.key ?? "state.url"})`;
}

/** The store's `gatewayId` option, when one is known. */
function gatewayIdOf(id: string | undefined): { gatewayId?: string } {
  return id === undefined ? {} : { gatewayId: id };
}

/** The authority's certificate, for `state.tls_ca_file`. */
async function readCa(path: string, file: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    throw new ConfigError(
      `state.tls_ca_file in ${file}: cannot read ${path}: ${(error as Error).message}`,
      { file },
    );
  }
}
