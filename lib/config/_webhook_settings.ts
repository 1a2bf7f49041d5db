/**
 * The `platforms.webhook` section of `config.yaml`, with the `WEBHOOK_*` variables of `.env` and
 * the process environment over it: the listen address, the limits, the home target and the
 * static routes, each checked; and a warning for each key of these sections that no version
 * reads.
 *
 * @module
 */
import { toBoolean, toInteger, toText, toUrl, unknownKeys } from "./_typed_values.ts";
import { isListenHost, LISTEN_HOST_RULE } from "./address.ts";
import type { WebhookSettings } from "./mod.ts";
import { ConfigError } from "../errors.ts";
import type { HomePaths } from "./home.ts";
import {
  checkRecord,
  checkTargetAndScheme,
  NAME_PATTERN,
  RECORD_FIELDS,
  type Route,
} from "../subscriptions/mod.ts";
import { TARGET_NAMES } from "../targets/mod.ts";
import { parseHome } from "../targets/origin.ts";

/**
 * Largest `idempotency_ttl`, in seconds: 10 years. Expiry times are milliseconds in SQLite
 * integers read back as JavaScript numbers, which cannot hold a TTL near 2^53 s exactly.
 */
export const MAX_IDEMPOTENCY_TTL_SECONDS = 315_360_000;

/** The layers a setting is read from, highest precedence first. */
export interface ConfigLayers {
  /** The process environment; empty values count as unset. */
  processEnv: Record<string, string | undefined>;
  /** The variables of `.env` (empty when `fileOnly`). */
  dotEnv: Record<string, string | undefined>;
  /** The home's files, for messages. */
  paths: HomePaths;
  /** Read `config.yaml` alone, without `.env` and environment overrides. @default {false} */
  fileOnly?: boolean;
}

/** Where a setting was read: the file (or "the process environment") and the key. */
type Picked = { value: unknown; from: { file: string; key: string } };

/**
 * Reads the `platforms.webhook` section with the environment's `WEBHOOK_*` variables over it.
 * @param yaml `webhook`: the `platforms.webhook` mapping; `extra`: its `extra` mapping
 * @param layers the environment and the home's files
 * @returns the merged webhook settings, defaults filled in
 * @throws ConfigError naming the key and the file, for a value out of bounds or malformed
 */
export function webhookSettings(
  yaml: { webhook: Record<string, unknown>; extra: Record<string, unknown> },
  layers: ConfigLayers,
): WebhookSettings {
  const { webhook: webhookYaml, extra } = yaml;
  const file = layers.paths.config;
  const pick = picker(layers);
  const at = (key: string) => ({ file, key: `platforms.webhook.extra.${key}` });

  const enabled = pick("WEBHOOK_ENABLED", "platforms.webhook.enabled", webhookYaml.enabled);
  const host = pick("WEBHOOK_HOST", "platforms.webhook.extra.host", extra.host);
  const port = pick("WEBHOOK_PORT", "platforms.webhook.extra.port", extra.port);
  const secret = pick("WEBHOOK_SECRET", "platforms.webhook.extra.secret", extra.secret);
  const publicUrl = pick(
    "WEBHOOK_PUBLIC_URL",
    "platforms.webhook.extra.public_url",
    extra.public_url,
  );

  return {
    enabled: toBoolean(enabled.value, enabled.from) ?? false,
    enabledBy: enabled.from,
    host: toHost(toText(host.value, host.from) ?? "127.0.0.1", host.from),
    port: toInteger(port.value, port.from, { min: 0, max: 65535 }) ?? 8644,
    secret: secretText(secret.value, secret.from) || undefined,
    publicUrl: toUrl(publicUrl.value, publicUrl.from),
    rateLimitPerMinute: toInteger(extra.rate_limit, at("rate_limit"), { min: 1 }) ?? 60,
    maxBodyBytes: toInteger(extra.max_body_bytes, at("max_body_bytes"), { min: 1 }) ?? 1_048_576,
    idempotencyTtlSeconds: toInteger(extra.idempotency_ttl, at("idempotency_ttl"), {
      min: 1,
      max: MAX_IDEMPOTENCY_TTL_SECONDS,
    }) ??
      86_400,
    retentionDays: toInteger(extra.retention_days, at("retention_days"), { min: 1, max: 3650 }) ??
      7,
    sessionTtlSeconds: toInteger(extra.session_ttl, at("session_ttl"), {
      min: 1,
      max: MAX_IDEMPOTENCY_TTL_SECONDS,
    }) ?? 604_800,
    homeTarget: toHomeTarget(toText(extra.home, at("home")) || undefined, at("home")),
    routes: staticRoutes(extra.routes, file),
  };
}

/**
 * A reader of one setting by precedence: process env > `.env` > `config.yaml`.
 * @returns `(envKey, yamlKey, yamlValue)` → the value and where it came from
 */
function picker(
  layers: ConfigLayers,
): (envKey: string, yamlKey: string, yamlValue: unknown) => Picked {
  const { processEnv, dotEnv, paths } = layers;
  // An empty variable (`WEBHOOK_PORT=`) is unset, not a value that hides the layers below.
  const given = (env: Record<string, string | undefined>, key: string) =>
    !layers.fileOnly && env[key] !== undefined && env[key] !== "";
  return (envKey, yamlKey, yamlValue) =>
    given(processEnv, envKey)
      ? { value: processEnv[envKey], from: { file: "the process environment", key: envKey } }
      : given(dotEnv, envKey)
      ? { value: dotEnv[envKey], from: { file: paths.envFile, key: envKey } }
      : { value: yamlValue, from: { file: paths.config, key: yamlKey } };
}

/** The keys read from each section of `config.yaml` the webhook platform owns. */
const KNOWN_KEYS = {
  "platforms.webhook": ["enabled", "extra"],
  "platforms.webhook.extra": [
    "host",
    "port",
    "secret",
    "public_url",
    "rate_limit",
    "max_body_bytes",
    "idempotency_ttl",
    "retention_days",
    "session_ttl",
    "home",
    "routes",
  ],
  route: RECORD_FIELDS,
};

/**
 * One warning per key of the webhook platform's sections of `config.yaml` that no version
 * reads: a misspelt `prot:` would leave the port at its default unsaid.
 * @param yaml `webhook`: the `platforms.webhook` mapping; `extra`: its `extra` mapping
 * @param file the path of `config.yaml`
 * @returns one sentence per unknown key
 */
export function webhookWarnings(
  yaml: { webhook: Record<string, unknown>; extra: Record<string, unknown> },
  file: string,
): string[] {
  const { webhook, extra } = yaml;
  const routes = extra.routes !== null && typeof extra.routes === "object"
    ? Object.entries(extra.routes as Record<string, Record<string, unknown>>)
    : [];
  return [
    ...unknownKeys(webhook, {
      path: "platforms.webhook",
      known: KNOWN_KEYS["platforms.webhook"],
      file,
    }),
    ...unknownKeys(extra, {
      path: "platforms.webhook.extra",
      known: KNOWN_KEYS["platforms.webhook.extra"],
      file,
    }),
    ...routes.flatMap(([name, record]) =>
      unknownKeys(record, {
        path: `platforms.webhook.extra.routes.${name}`,
        known: KNOWN_KEYS.route,
        file,
      })
    ),
  ];
}

/**
 * Checks the address to listen on: a host name, an IPv4 address or an IPv6 one (bracketed or
 * not). A typo must stop the command with the key named, not end in a stack trace at listen.
 * @throws ConfigError naming the key and the file
 */
function toHost(host: string, from: { file: string; key: string }): string {
  if (isListenHost(host)) return host;
  throw new ConfigError(
    `${from.key} in ${from.file} must be ${LISTEN_HOST_RULE}, ` +
      `got "${host}"`,
    { file: from.file },
  );
}

/**
 * Checks `extra.home` (`<target>` or `<target>:<chat>`, e.g. `telegram:123456`), the place
 * `deliver: origin` answers events that have no issue to comment on.
 * @throws ConfigError for an unknown target, or `origin` itself
 */
function toHomeTarget(
  home: string | undefined,
  from: { file: string; key: string },
): string | undefined {
  if (home === undefined) return undefined;
  const { target } = parseHome(home);
  if (TARGET_NAMES.includes(target) && target !== "origin") return home;
  throw new ConfigError(
    `${from.key} in ${from.file} must be <target> or <target>:<chat id>, with a target among ` +
      `${TARGET_NAMES.filter((name) => name !== "origin").join(", ")}; got "${home}"`,
    { file: from.file },
  );
}

/**
 * Reads `platforms.webhook.extra.routes`: each static route's name and fields, checked as a
 * subscription's are.
 * @param value the `routes` mapping as parsed, if any
 * @param file the path of `config.yaml`, for messages
 * @returns the routes by name, each with `origin: "static"`
 * @throws ConfigError naming the route's key for a bad name, a field of the wrong type, or an
 *   unknown target or scheme
 */
function staticRoutes(value: unknown, file: string): Map<string, Route> {
  const routes = new Map<string, Route>();
  if (value === undefined || value === null) return routes;
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new ConfigError(`platforms.webhook.extra.routes in ${file} must be a mapping`, { file });
  }
  for (const [name, record] of Object.entries(value)) {
    const key = `platforms.webhook.extra.routes.${name}`;
    if (!NAME_PATTERN.test(name)) {
      throw new ConfigError(`${key} in ${file}: name must match ${NAME_PATTERN.source}`, { file });
    }
    if (record === null || typeof record !== "object" || Array.isArray(record)) {
      throw new ConfigError(`${key} in ${file} must be a mapping of subscription fields`, { file });
    }
    const checked = checkRecord(record as Record<string, unknown>, `${key} in ${file}`, file);
    checkTargetAndScheme(checked, (field) => `${key}.${field} in ${file}`, file);
    routes.set(name, { ...checked, name, origin: "static" });
  }
  return routes;
}

/**
 * Reads the global secret: a string only. YAML reads an unquoted `0x1F`, `012345` or `1e3` as a
 * number, whose text (`31`, `12345`, `1000`) is not what the operator gave senders.
 * @param value the value as parsed from YAML or the environment
 * @param from the key and file it came from, for the message
 * @returns the secret as written; undefined when missing
 * @throws ConfigError for a number or any other type
 */
function secretText(value: unknown, from: { key: string; file: string }): string | undefined {
  if (typeof value === "number") {
    throw new ConfigError(
      `${from.key} in ${from.file} must be text: YAML read it as the number ${value}; quote it ` +
        `(secret: "...") so that it stays as written`,
      { file: from.file },
    );
  }
  return toText(value, from);
}
