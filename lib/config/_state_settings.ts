/**
 * The `state` section of `config.yaml`, with `DATABASE_URL` from `.env` and the process
 * environment over `state.url`: where the gateway keeps its events (docs/configuration.md#state,
 * docs/scaling.md). SQLite in the home is the default; `postgres` names a database that any
 * number of gateways share.
 *
 * @module
 */
import { ConfigError } from "../errors.ts";
import type { HomePaths } from "./home.ts";
import { toInteger, toText, unknownKeys } from "./_typed_values.ts";

/** The `state` section, after merging (docs/configuration.md#state). */
export interface StateSettings {
  /** `state.backend`: `sqlite` (the home's `state/gateway.db`) or `postgres`. @default {"sqlite"} */
  backend: "sqlite" | "postgres";
  /**
   * `DATABASE_URL` / `state.url`: the PostgreSQL connection URL. Holds a password: never put in a
   * message or a log line. Undefined when neither is set (a `postgres` backend then cannot open).
   */
  url?: string;
  /** Where `url` came from, for messages: `DATABASE_URL` or `state.url`, and its file. */
  urlFrom?: { file: string; key: string };
  /** `state.pool_size`: most connections each gateway opens. @default {10} */
  poolSize: number;
  /**
   * `state.lease_seconds`: how long a claim's lease lasts without a heartbeat; another gateway
   * claims a dead one's events this long after it died. @default {30}
   */
  leaseSeconds: number;
  /** `state.connect_timeout`: longest wait for a connection, in seconds. @default {5} */
  connectTimeoutSeconds: number;
  /**
   * `state.tls_ca_file`: a PEM file of the authority that signed the server's certificate; with
   * it, connections use TLS and check the certificate and the host name. Relative to the home.
   */
  tlsCaFile?: string;
  /**
   * `state.gateway_id`: the id this gateway's claims name; a gateway started again under the
   * same id requeues its own cut-off runs at once. Two gateways running at once must not share
   * one. @default {a random id at each start}
   */
  gatewayId?: string;
}

/** The keys of the `state` section. */
const KNOWN = [
  "backend",
  "url",
  "pool_size",
  "lease_seconds",
  "connect_timeout",
  "tls_ca_file",
  "gateway_id",
];

/**
 * Reads the `state` section with `DATABASE_URL` over `state.url` (process env > `.env` >
 * `config.yaml`).
 * @param yaml the `state` mapping of `config.yaml` (empty when absent)
 * @param layers `processEnv` and `dotEnv` (empty when `fileOnly`), and the home's files
 * @returns the merged settings, defaults filled in
 * @throws ConfigError naming the key and the file, for an unknown backend, a URL that is not
 *   `postgres://` or `postgresql://` (the URL itself is not repeated), or a number out of bounds
 * @example
 * ```ts
 * stateSettings({ backend: "postgres" }, {
 *   processEnv: { DATABASE_URL: "postgres://agent:pw@db:5432/agent" },
 *   dotEnv: {},
 *   paths,
 * }); // { backend: "postgres", url: "postgres://...", poolSize: 10, leaseSeconds: 30, ... }
 * ```
 */
export function stateSettings(
  yaml: Record<string, unknown>,
  layers: {
    processEnv: Record<string, string | undefined>;
    dotEnv: Record<string, string | undefined>;
    paths: HomePaths;
    fileOnly?: boolean;
  },
): StateSettings {
  const file = layers.paths.config;
  const backend = toText(yaml.backend, { file, key: "state.backend" }) ?? "sqlite";
  if (backend !== "sqlite" && backend !== "postgres") {
    throw new ConfigError(
      `state.backend in ${file} must be sqlite or postgres, not ${JSON.stringify(backend)}`,
      { file },
    );
  }
  const source = databaseUrl(yaml, layers);
  const number = (key: string, range: { min: number; max: number }) =>
    toInteger(yaml[key], { file, key: `state.${key}` }, range);
  const tlsCaFile = toText(yaml.tls_ca_file, { file, key: "state.tls_ca_file" }) || undefined;
  const gatewayId = toText(yaml.gateway_id, { file, key: "state.gateway_id" }) || undefined;
  return {
    backend,
    ...source,
    poolSize: number("pool_size", { min: 1, max: 1000 }) ?? 10,
    leaseSeconds: number("lease_seconds", { min: 3, max: 3600 }) ?? 30,
    connectTimeoutSeconds: number("connect_timeout", { min: 1, max: 600 }) ?? 5,
    ...(tlsCaFile === undefined ? {} : { tlsCaFile }),
    ...(gatewayId === undefined ? {} : { gatewayId }),
  };
}

/**
 * One warning per key of the `state` section that no version reads.
 * @param yaml the `state` mapping of `config.yaml`
 * @param file the path of `config.yaml`
 * @returns one sentence per unknown key
 */
export function stateWarnings(yaml: Record<string, unknown>, file: string): string[] {
  return unknownKeys(yaml, { path: "state", known: KNOWN, file });
}

/** `DATABASE_URL` (process env, then `.env`), else `state.url`; checked, never repeated. */
function databaseUrl(
  yaml: Record<string, unknown>,
  layers: Parameters<typeof stateSettings>[1],
): Pick<StateSettings, "url" | "urlFrom"> {
  const fromEnv = (env: Record<string, string | undefined>) =>
    layers.fileOnly ? undefined : env.DATABASE_URL || undefined;
  const candidates: [string | undefined, { file: string; key: string }][] = [
    [fromEnv(layers.processEnv), { file: "the process environment", key: "DATABASE_URL" }],
    [fromEnv(layers.dotEnv), { file: layers.paths.envFile, key: "DATABASE_URL" }],
    [
      toText(yaml.url, { file: layers.paths.config, key: "state.url" }) || undefined,
      { file: layers.paths.config, key: "state.url" },
    ],
  ];
  const found = candidates.find(([url]) => url !== undefined);
  if (found === undefined) return {};
  const [url, urlFrom] = found;
  if (!/^postgres(ql)?:\/\/./i.test(url!)) {
    throw new ConfigError(
      `${urlFrom.key} in ${urlFrom.file} must be a postgres:// URL ` +
        "(postgres://user:password@host:5432/name)",
      { file: urlFrom.file },
    );
  }
  return { url, urlFrom };
}
