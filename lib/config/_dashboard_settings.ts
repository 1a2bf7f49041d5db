/**
 * The `dashboard` section of `config.yaml`, with `DASHBOARD_HOST` and `DASHBOARD_PORT` from
 * `.env` and the process environment over it: whether `gateway run` serves the dashboard, and on
 * which address (docs/dashboard.md). The dashboard has a listener of its own, so that exposing
 * the webhook port never exposes it.
 *
 * @module
 */
import { ConfigError } from "../errors.ts";
import { isListenHost, LISTEN_HOST_RULE } from "./address.ts";
import type { HomePaths } from "./home.ts";
import { toBoolean, toInteger, toText, unknownKeys } from "./_typed_values.ts";

/** The `dashboard` section, after merging (docs/dashboard.md). */
export interface DashboardSettings {
  /** `dashboard.enabled`: whether `gateway run` serves the dashboard. @default {true} */
  enabled: boolean;
  /** `dashboard.host` / `DASHBOARD_HOST`: the address it listens on. @default {"127.0.0.1"} */
  host: string;
  /** `dashboard.port` / `DASHBOARD_PORT`: its port; 0 picks a free one. @default {8645} */
  port: number;
}

/** The dashboard's port when nothing sets one. */
export const DEFAULT_DASHBOARD_PORT = 8645;

/** The layers a setting is read from, highest precedence first. */
interface Layers {
  /** The process environment; empty values count as unset. */
  processEnv: Record<string, string | undefined>;
  /** The variables of `.env` (empty when `fileOnly`). */
  dotEnv: Record<string, string | undefined>;
  /** The home's files, for messages. */
  paths: HomePaths;
  /** Read `config.yaml` alone, without `.env` and environment overrides. @default {false} */
  fileOnly?: boolean;
}

/**
 * Reads the `dashboard` section with `DASHBOARD_HOST` and `DASHBOARD_PORT` over it (process
 * env > `.env` > `config.yaml` > defaults).
 * @param yaml the `dashboard` mapping of `config.yaml` (empty when absent)
 * @param layers the environment and the home's files
 * @returns the merged settings, defaults filled in
 * @throws ConfigError naming the key and the file, for a value out of bounds or malformed
 * @example
 * ```ts
 * dashboardSettings({ port: 9000 }, { processEnv: {}, dotEnv: {}, paths });
 * // { enabled: true, host: "127.0.0.1", port: 9000 }
 * ```
 */
export function dashboardSettings(
  yaml: Record<string, unknown>,
  layers: Layers,
): DashboardSettings {
  const file = layers.paths.config;
  const host = pick(layers, "DASHBOARD_HOST", "dashboard.host", yaml.host);
  const port = pick(layers, "DASHBOARD_PORT", "dashboard.port", yaml.port);
  const hostText = toText(host.value, host.from) ?? "127.0.0.1";
  if (!isListenHost(hostText)) {
    throw new ConfigError(
      `${host.from.key} in ${host.from.file} must be ${LISTEN_HOST_RULE}, got "${hostText}"`,
      { file: host.from.file },
    );
  }
  return {
    enabled: toBoolean(yaml.enabled, { file, key: "dashboard.enabled" }) ?? true,
    host: hostText,
    port: toInteger(port.value, port.from, { min: 0, max: 65535 }) ?? DEFAULT_DASHBOARD_PORT,
  };
}

/**
 * One warning per key of the `dashboard` section that no version reads: a misspelt `prot:`
 * would leave the port at its default unsaid.
 * @param yaml the `dashboard` mapping of `config.yaml`
 * @param file the path of `config.yaml`
 * @returns one sentence per unknown key
 */
export function dashboardWarnings(yaml: Record<string, unknown>, file: string): string[] {
  return unknownKeys(yaml, { path: "dashboard", known: ["enabled", "host", "port"], file });
}

/**
 * One setting by precedence: process env > `.env` > `config.yaml`. An empty variable
 * (`DASHBOARD_PORT=`) is unset, not a value that hides the layers below.
 * @returns the value and where it came from, for messages
 */
function pick(
  layers: Layers,
  envKey: string,
  yamlKey: string,
  yamlValue: unknown,
): { value: unknown; from: { file: string; key: string } } {
  const given = (env: Record<string, string | undefined>) =>
    !layers.fileOnly && env[envKey] !== undefined && env[envKey] !== "";
  if (given(layers.processEnv)) {
    return {
      value: layers.processEnv[envKey],
      from: { file: "the process environment", key: envKey },
    };
  }
  if (given(layers.dotEnv)) {
    return { value: layers.dotEnv[envKey], from: { file: layers.paths.envFile, key: envKey } };
  }
  return { value: yamlValue, from: { file: layers.paths.config, key: yamlKey } };
}
