/**
 * Configuration: `config.yaml`, `.env` and the process environment, merged key by key with
 * the precedence process env > `.env` > `config.yaml` > defaults (CONTRACT §2).
 *
 * A malformed value is a {@link ConfigError} that names the key and the file; nothing falls
 * back to a default silently.
 *
 * @module
 */
import { parseEnv } from "node:util";
import { parse as parseYaml } from "yaml";
import type { AgentSettings } from "./agents/mod.ts";
import { DEFAULT_RETRY, MAX_WAIT_SECONDS, type RetryPolicy } from "./_retry.ts";
import { withoutByteOrderMark } from "./fs.ts";
import { objectAt, toBoolean, toInteger, toText, toUrl } from "./_config_values.ts";
import { yamlProblem } from "./config_file.ts";
import { ConfigError } from "./errors.ts";
import { unbracketed } from "./gateway_lock.ts";
import { type HomePaths, homePaths } from "./home.ts";
import {
  checkRecord,
  checkTargetAndScheme,
  NAME_PATTERN,
  RECORD_FIELDS,
  type Route,
} from "./subscription.ts";
import { TARGET_NAMES } from "./targets/mod.ts";
import { parseHome } from "./targets/origin.ts";

/**
 * Largest `idempotency_ttl`, in seconds: 10 years. Expiry times are milliseconds in SQLite
 * integers read back as JavaScript numbers, so a TTL near 2^53 s broke the state database.
 */
export const MAX_IDEMPOTENCY_TTL_SECONDS = 315_360_000;
/** Largest `agent.timeout_seconds`: one day (timers cannot count past 24.8 days anyway). */
export const MAX_TIMEOUT_SECONDS = 86_400;
/** Largest `agent.retry.initial_delay_seconds` and `max_delay_seconds`: one week. */
export const MAX_RETRY_DELAY_SECONDS = MAX_WAIT_SECONDS;

/** The `platforms.webhook` section, after merging (CONTRACT §2). */
export interface WebhookSettings {
  /** `platforms.webhook.enabled` / `WEBHOOK_ENABLED`. @default {false} */
  enabled: boolean;
  /**
   * Where `enabled` came from: `file` is `config.yaml`, `.env` or "the process environment",
   * `key` the YAML key or variable. @default {config.yaml, platforms.webhook.enabled}
   */
  enabledBy?: { file: string; key: string };
  /** Listen address. @default {"127.0.0.1"} */
  host: string;
  /** Listen port; 0 picks a free one. @default {8644} */
  port: number;
  /** Global HMAC secret used by static routes without their own. */
  secret?: string;
  /** Base of the URLs that `subscribe` prints, e.g. `https://hooks.example.com`. */
  publicUrl?: string;
  /** Requests per minute per subscription. @default {60} */
  rateLimitPerMinute: number;
  /** Largest accepted body, in bytes. @default {1048576} */
  maxBodyBytes: number;
  /** How long a delivery id is remembered, in seconds. @default {86400} */
  idempotencyTtlSeconds: number;
  /** How long accepted events and their payloads are kept, in days. @default {7} */
  retentionDays: number;
  /** Fallback target for `deliver: origin`, e.g. `telegram:123456`. */
  homeTarget?: string;
  /** Static routes from `config.yaml`, keyed by name; read-only for the CLI. */
  routes: Map<string, Route>;
}

/** Everything a command or the gateway needs to know, read once per command. */
export interface Config {
  paths: HomePaths;
  /** True when `config.yaml` exists (the gateway creates one on first run otherwise). */
  configFileExists: boolean;
  webhook: WebhookSettings;
  agent: AgentSettings & { maxConcurrency: number; retry: RetryPolicy };
  /** Process env merged over `.env`: tokens, home channels and API URLs for the targets. */
  env: Record<string, string | undefined>;
  /**
   * What is wrong in `config.yaml` without stopping anything: keys of the webhook platform's
   * sections that no version reads (a misspelt `prot:` would leave the port at its default
   * unsaid), one sentence each. Commands print them on standard error; the gateway logs them.
   */
  warnings: string[];
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
    "home",
    "routes",
  ],
  route: RECORD_FIELDS,
};

/**
 * One warning per key of `section` that is not in `known`.
 * @param section a mapping read from `config.yaml`
 * @param path the section's dotted key, e.g. `platforms.webhook.extra`
 */
function unknownKeys(
  section: Record<string, unknown>,
  path: string,
  known: readonly string[],
  file: string,
): string[] {
  return Object.keys(section).filter((key) => !known.includes(key)).map((key) =>
    `${path}.${key} in ${file} is not a setting and is ignored (a typo?); ${path} takes: ` +
    known.join(", ")
  );
}

/**
 * Reads the home folder's `config.yaml` and `.env` and merges them with the process env.
 * `.env` and the subscription file are narrowed to mode 0600 when broader (they hold secrets).
 * @param processEnv the process environment (wins over `.env`); empty values count as unset
 * @param options.fileOnly read `config.yaml` alone, without `.env` and environment overrides
 *   (what `gateway setup` shows and edits)
 * @returns the merged configuration
 * @throws ConfigError for unreadable or malformed files and values, naming key and file
 */
export async function loadConfig(
  processEnv: Record<string, string | undefined>,
  options: { fileOnly?: boolean } = {},
): Promise<Config> {
  const paths = homePaths(processEnv);
  await Promise.all([narrowMode(paths.envFile), narrowMode(paths.subscriptions)]);
  const dotEnv = options.fileOnly ? {} : await readEnvFile(paths.envFile);
  // An empty variable (`WEBHOOK_PORT=`) is unset, not a value that hides the layers below.
  const given = (env: Record<string, string | undefined>, key: string) =>
    !options.fileOnly && env[key] !== undefined && env[key] !== "";
  const env = { ...dotEnv, ...processEnv };
  const yaml = await readYamlFile(paths.config);
  const webhookYaml = objectAt(yaml.data, ["platforms", "webhook"], paths.config);
  const extra = objectAt(webhookYaml, ["extra"], paths.config, ["platforms", "webhook"]);
  const agentYaml = objectAt(yaml.data, ["agent"], paths.config);

  const pick = (envKey: string, yamlKey: string, yamlValue: unknown) =>
    given(processEnv, envKey)
      ? { value: processEnv[envKey], from: { file: "the process environment", key: envKey } }
      : given(dotEnv, envKey)
      ? { value: dotEnv[envKey], from: { file: paths.envFile, key: envKey } }
      : { value: yamlValue, from: { file: paths.config, key: yamlKey } };
  const at = (key: string) => ({ file: paths.config, key: `platforms.webhook.extra.${key}` });

  const enabled = pick("WEBHOOK_ENABLED", "platforms.webhook.enabled", webhookYaml.enabled);
  const host = pick("WEBHOOK_HOST", "platforms.webhook.extra.host", extra.host);
  const port = pick("WEBHOOK_PORT", "platforms.webhook.extra.port", extra.port);
  const secret = pick("WEBHOOK_SECRET", "platforms.webhook.extra.secret", extra.secret);
  const publicUrl = pick(
    "WEBHOOK_PUBLIC_URL",
    "platforms.webhook.extra.public_url",
    extra.public_url,
  );

  const webhook: WebhookSettings = {
    enabled: toBoolean(enabled.value, enabled.from) ?? false,
    enabledBy: enabled.from,
    host: toHost(toText(host.value, host.from) ?? "127.0.0.1", host.from),
    port: toInteger(port.value, port.from, { min: 0, max: 65535 }) ?? 8644,
    secret: toText(secret.value, secret.from) || undefined,
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
    homeTarget: toHomeTarget(toText(extra.home, at("home")) || undefined, at("home")),
    routes: staticRoutes(extra.routes, paths.config),
  };
  const routes = extra.routes !== null && typeof extra.routes === "object"
    ? Object.entries(extra.routes as Record<string, Record<string, unknown>>)
    : [];
  return {
    paths,
    configFileExists: yaml.exists,
    webhook,
    agent: agentSettings(agentYaml, env, paths.config),
    env,
    warnings: [
      ...unknownKeys(
        webhookYaml,
        "platforms.webhook",
        KNOWN_KEYS["platforms.webhook"],
        paths.config,
      ),
      ...unknownKeys(
        extra,
        "platforms.webhook.extra",
        KNOWN_KEYS["platforms.webhook.extra"],
        paths.config,
      ),
      ...routes.flatMap(([name, record]) =>
        unknownKeys(
          record,
          `platforms.webhook.extra.routes.${name}`,
          KNOWN_KEYS.route,
          paths.config,
        )
      ),
    ],
  };
}

function agentSettings(
  yaml: Record<string, unknown>,
  env: Record<string, string | undefined>,
  file: string,
): Config["agent"] {
  const at = (key: string) => ({ file, key: `agent.${key}` });
  const provider = toText(yaml.provider, at("provider")) ?? "openai";
  if (provider !== "openai" && provider !== "command") {
    throw new ConfigError(
      `agent.provider in ${file} must be "openai" or "command", not ${JSON.stringify(provider)}`,
      { file },
    );
  }
  const command = yaml.command;
  if (
    command !== undefined &&
    (!Array.isArray(command) || command.length === 0 || command.some((a) => typeof a !== "string"))
  ) {
    throw new ConfigError(`agent.command in ${file} must be a list of strings (argv)`, { file });
  }
  if (provider === "command" && command === undefined) {
    throw new ConfigError(`agent.provider is "command" in ${file} but agent.command is not set`, {
      file,
    });
  }
  const retry = objectAt(yaml, ["retry"], file, ["agent"]);
  const initialDelaySeconds = toInteger(
    retry.initial_delay_seconds,
    at("retry.initial_delay_seconds"),
    { min: 0, max: MAX_RETRY_DELAY_SECONDS },
  );
  const maxDelaySeconds = toInteger(retry.max_delay_seconds, at("retry.max_delay_seconds"), {
    min: 1,
    max: MAX_RETRY_DELAY_SECONDS,
  });
  // Both set, the wrong way round: every delay would quietly be the maximum.
  if (
    initialDelaySeconds !== undefined && maxDelaySeconds !== undefined &&
    initialDelaySeconds > maxDelaySeconds
  ) {
    throw new ConfigError(
      `agent.retry.initial_delay_seconds (${initialDelaySeconds}) in ${file} is longer than ` +
        `agent.retry.max_delay_seconds (${maxDelaySeconds}): ` +
        "the first delay cannot exceed the longest",
      { file },
    );
  }
  return {
    provider,
    model: env.AGENT_MODEL || toText(yaml.model, at("model")) || "gpt-4o-mini",
    baseUrl:
      toUrl(env.OPENAI_BASE_URL, { file: "the environment or .env", key: "OPENAI_BASE_URL" }) ??
        toUrl(yaml.base_url, at("base_url")),
    apiKey: env.OPENAI_API_KEY || undefined,
    command: command as string[] | undefined,
    timeoutSeconds: toInteger(yaml.timeout_seconds, at("timeout_seconds"), {
      min: 1,
      max: MAX_TIMEOUT_SECONDS,
    }) ?? 300,
    maxConcurrency: toInteger(yaml.max_concurrency, at("max_concurrency"), { min: 1, max: 1000 }) ??
      2,
    retry: {
      maxAttempts: toInteger(retry.max_attempts, at("retry.max_attempts"), { min: 1, max: 100 }) ??
        DEFAULT_RETRY.maxAttempts,
      initialDelayMs: initialDelaySeconds === undefined
        ? DEFAULT_RETRY.initialDelayMs
        : 1000 * initialDelaySeconds,
      maxDelayMs: maxDelaySeconds === undefined ? DEFAULT_RETRY.maxDelayMs : 1000 * maxDelaySeconds,
    },
  };
}

/** What {@link isListenHost} accepts, for error messages. */
export const LISTEN_HOST_RULE = "a host name or an IP address (127.0.0.1, 0.0.0.0, ::)";

/**
 * Tells whether `host` can be an address to listen on: a host name, an IPv4 address or an IPv6
 * one (bracketed or not).
 */
export function isListenHost(host: string): boolean {
  const bare = unbracketed(host);
  return /^[A-Za-z0-9.-]+$/.test(bare) || (bare.includes(":") && /^[0-9A-Fa-f:.]+$/.test(bare));
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
 * Makes a file that holds secrets readable by its owner only (0600) when it is broader; a
 * missing file, or one we may not change, is left alone.
 */
async function narrowMode(path: string): Promise<void> {
  try {
    const { mode } = await Deno.stat(path);
    if (mode !== null && (mode & 0o077) !== 0) await Deno.chmod(path, mode & 0o700);
  } catch {
    // Missing, or not ours to change: reading it reports any real problem.
  }
}

/**
 * Reads `.env` with `node:util` `parseEnv`; a missing file is empty.
 * @throws ConfigError when the file cannot be read, or has a line that is not `KEY=value`
 */
async function readEnvFile(path: string): Promise<Record<string, string>> {
  let text: string;
  try {
    text = withoutByteOrderMark(await Deno.readTextFile(path));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return {};
    throw new ConfigError(`Cannot read ${path}: ${(error as Error).message}`, {
      file: path,
      cause: error,
    });
  }
  checkEnvLines(text, path);
  return parseEnv(text) as Record<string, string>;
}

// Any name parseEnv takes (`my.key`, `MY-KEY`): the check is only for a missing "=".
const ENV_ASSIGNMENT = /^\s*(?:export\s+)?[^=#\s][^=]*=(.*)$/;

/**
 * Refuses a `.env` line that is neither blank, a `#` comment nor `KEY=value` (a quoted value may
 * run over several lines): `parseEnv` skips such a line without a word, so `TOKEN 123` (the `=`
 * forgotten) would leave the variable unset and surface much later as "TOKEN is not set".
 * The line's text is not quoted: it may hold a secret.
 * @throws ConfigError naming the file and the line number
 */
function checkEnvLines(text: string, path: string): void {
  let closing: string | undefined; // the quote that ends a value spanning lines
  text.split(/\r?\n/).forEach((line, index) => {
    if (closing !== undefined) {
      if (line.includes(closing)) closing = undefined;
      return;
    }
    if (line.trim() === "" || line.trimStart().startsWith("#")) return;
    const value = line.match(ENV_ASSIGNMENT)?.[1].trimStart();
    if (value === undefined) {
      throw new ConfigError(
        `${path} line ${index + 1} is not KEY=value (is the "=" missing?); fix or remove it`,
        { file: path },
      );
    }
    const quote = value[0];
    if ((quote === '"' || quote === "'" || quote === "`") && !value.slice(1).includes(quote)) {
      closing = quote;
    }
  });
}

async function readYamlFile(path: string): Promise<{ exists: boolean; data: unknown }> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { exists: false, data: {} };
    throw new ConfigError(`Cannot read ${path}: ${(error as Error).message}`, {
      file: path,
      cause: error,
    });
  }
  try {
    return { exists: true, data: parseYaml(text) ?? {} };
  } catch (error) {
    throw new ConfigError(`${path} is not valid YAML: ${yamlProblem(error as Error)}`, {
      file: path,
      cause: error,
    });
  }
}

const LOCAL_HOSTS = new Set(["0.0.0.0", "::", "[::]", "127.0.0.1", "::1", "[::1]", "localhost"]);

/**
 * The base of webhook URLs (CONTRACT §3): `public_url`, else `http://localhost:<port>` when the
 * host is a wildcard or loopback address, else `http://<host>:<port>`. Other addresses of
 * 127.0.0.0/8 are printed as they are: `localhost` would reach 127.0.0.1, not them.
 * @param webhook the merged webhook settings
 * @returns a URL without a trailing slash
 */
export function webhookBaseUrl(webhook: Pick<WebhookSettings, "publicUrl" | "host" | "port">) {
  if (webhook.publicUrl) return webhook.publicUrl;
  const host = LOCAL_HOSTS.has(webhook.host)
    ? "localhost"
    : webhook.host.includes(":")
    ? `[${webhook.host}]`
    : webhook.host;
  return `http://${host}:${webhook.port}`;
}

/**
 * The webhook URL of one subscription: base + `/webhooks/<name>`.
 * @param webhook the merged webhook settings
 * @param name a valid subscription name
 */
export function webhookUrl(
  webhook: Pick<WebhookSettings, "publicUrl" | "host" | "port">,
  name: string,
): string {
  return `${webhookBaseUrl(webhook)}/webhooks/${name}`;
}

/**
 * The answer to every webhook command when the platform is disabled (CONTRACT §10): the three
 * ways to enable it, and, when `WEBHOOK_ENABLED` is what turns it off, that variable and where
 * it is set (it wins over the wizard and `config.yaml`).
 * @param paths the home's files
 * @param enabledBy where the `enabled` value came from (`WebhookSettings.enabledBy`)
 */
export function platformDisabledMessage(
  paths: HomePaths,
  enabledBy?: { file: string; key: string },
): string {
  const variable = enabledBy?.key === "WEBHOOK_ENABLED" ? enabledBy : undefined;
  return [
    "Webhook platform is not enabled. Enable it in one of three ways:",
    "  1. run the setup wizard:   agent gateway setup",
    `  2. in ${paths.config}:`,
    "       platforms:",
    "         webhook:",
    "           enabled: true",
    `  3. in ${paths.envFile}:   WEBHOOK_ENABLED=true`,
    ...(variable
      ? [
        `Now WEBHOOK_ENABLED in ${variable.file} turns it off, whatever config.yaml says: ` +
        (variable.file === paths.envFile ? "set it to true or remove that line." : "unset it."),
      ]
      : []),
  ].join("\n");
}
