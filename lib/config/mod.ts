/**
 * Configuration: `config.yaml`, `.env` and the process environment, merged key by key with
 * the precedence process env > `.env` > `config.yaml` > defaults (docs/configuration.md).
 *
 * A malformed value is a `ConfigError` that names the key and the file; nothing falls
 * back to a default silently.
 *
 * The folder's other public files: `home.ts` (where the files are), `config_file.ts` and
 * `env_file.ts` (reading and editing them), `address.ts` (hosts and webhook URLs) and `fs.ts`
 * (atomic, locked, private writes). Files starting with `_` read the sections and are private.
 *
 * @module
 */
import type { AgentSettings } from "../agents/mod.ts";
import type { RetryPolicy } from "../worker/retry.ts";
import { agentSettings, agentWarnings } from "./_agent_settings.ts";
import {
  type DashboardSettings,
  dashboardSettings,
  dashboardWarnings,
} from "./_dashboard_settings.ts";
import { readYamlFile } from "./config_file.ts";
import { readEnvFile } from "./env_file.ts";
import { narrowMode } from "./fs.ts";
import { objectAt } from "./_typed_values.ts";
import { type StateSettings, stateSettings, stateWarnings } from "./_state_settings.ts";
import { webhookSettings, webhookWarnings } from "./_webhook_settings.ts";
import { type HomePaths, homePaths } from "./home.ts";
import type { Route } from "../subscriptions/mod.ts";

export { MAX_RETRY_DELAY_SECONDS, MAX_TIMEOUT_SECONDS } from "./_agent_settings.ts";
export { MAX_IDEMPOTENCY_TTL_SECONDS } from "./_webhook_settings.ts";
export { type DashboardSettings, DEFAULT_DASHBOARD_PORT } from "./_dashboard_settings.ts";
export type { StateSettings } from "./_state_settings.ts";
export { isListenHost, LISTEN_HOST_RULE, webhookBaseUrl, webhookUrl } from "./address.ts";

/** The `platforms.webhook` section, after merging (docs/configuration.md). */
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
  /**
   * How long a turn of a conversation is remembered, in seconds (`extra.session_ttl`,
   * docs/subscriptions.md#conversations). @default {604800}
   */
  sessionTtlSeconds: number;
  /** Fallback target for `deliver: origin`, e.g. `telegram:123456`. */
  homeTarget?: string;
  /** Static routes from `config.yaml`, keyed by name; read-only for the CLI. */
  routes: Map<string, Route>;
}

/** Everything a command or the gateway needs to know, read once per command. */
export interface Config {
  /** The home folder and the files in it. */
  paths: HomePaths;
  /** True when `config.yaml` exists (the gateway creates one on first run otherwise). */
  configFileExists: boolean;
  /** The `platforms.webhook` section, with the `WEBHOOK_*` variables over it. */
  webhook: WebhookSettings;
  /**
   * The `agent` section, with `AGENT_MODEL` and `OPENAI_*` over it: the provider, how many
   * agent runs at once (`maxConcurrency`) and the retry policy.
   */
  agent: AgentSettings & { maxConcurrency: number; retry: RetryPolicy };
  /** The `dashboard` section, with `DASHBOARD_HOST` and `DASHBOARD_PORT` over it. */
  dashboard: DashboardSettings;
  /** The `state` section, with `DATABASE_URL` over `state.url`: where events are kept. */
  state: StateSettings;
  /** Process env merged over `.env`: tokens, home channels and API URLs for the targets. */
  env: Record<string, string | undefined>;
  /**
   * What is wrong in `config.yaml` without stopping anything: keys of the webhook platform's
   * sections that no version reads (a misspelt `prot:` would leave the port at its default
   * unsaid), one sentence each. Commands print them on standard error; the gateway logs them.
   */
  warnings: string[];
}

/**
 * Reads the home folder's `config.yaml` and `.env` and merges them with the process env.
 * `.env` and the subscription file are narrowed to mode 0600 when broader (they hold secrets).
 * @param processEnv the process environment (wins over `.env`); empty values count as unset
 * @param options.fileOnly read `config.yaml` alone, without `.env` and environment overrides
 *   (what `gateway setup` shows and edits)
 * @returns the merged configuration
 * @throws ConfigError for unreadable or malformed files and values, naming key and file
 * @example
 * ```ts
 * const config = await loadConfig({ AGENT_HOME: "/srv/agent", WEBHOOK_PORT: "9000" });
 * config.webhook.port; // 9000, whatever config.yaml says
 * config.paths.subscriptions; // "/srv/agent/webhook_subscriptions.json"
 * ```
 */
export async function loadConfig(
  processEnv: Record<string, string | undefined>,
  options: { fileOnly?: boolean } = {},
): Promise<Config> {
  const paths = homePaths(processEnv);
  await Promise.all([narrowMode(paths.envFile), narrowMode(paths.subscriptions)]);
  const dotEnv = options.fileOnly ? {} : await readEnvFile(paths.envFile);
  // An empty variable counts as unset: `TELEGRAM_BOT_TOKEN= agent ...` must not hide `.env`'s.
  const setInProcess = Object.fromEntries(
    Object.entries(processEnv).filter(([, value]) => value !== undefined && value !== ""),
  );
  const env = { ...dotEnv, ...setInProcess };
  const yaml = await readYamlFile(paths.config);
  const webhookYaml = objectAt(yaml.data, ["platforms", "webhook"], paths.config);
  const extra = objectAt(webhookYaml, ["extra"], paths.config, ["platforms", "webhook"]);
  const agentYaml = objectAt(yaml.data, ["agent"], paths.config);
  const dashboardYaml = objectAt(yaml.data, ["dashboard"], paths.config);
  const stateYaml = objectAt(yaml.data, ["state"], paths.config);
  const sections = { webhook: webhookYaml, extra };
  return {
    paths,
    configFileExists: yaml.exists,
    webhook: webhookSettings(sections, { processEnv, dotEnv, paths, fileOnly: options.fileOnly }),
    agent: agentSettings(agentYaml, env, paths.config),
    dashboard: dashboardSettings(dashboardYaml, {
      processEnv,
      dotEnv,
      paths,
      fileOnly: options.fileOnly,
    }),
    state: stateSettings(stateYaml, { processEnv, dotEnv, paths, fileOnly: options.fileOnly }),
    env,
    warnings: [
      ...webhookWarnings(sections, paths.config),
      ...agentWarnings(agentYaml, paths.config),
      ...dashboardWarnings(dashboardYaml, paths.config),
      ...stateWarnings(stateYaml, paths.config),
    ],
  };
}

/**
 * The answer to every webhook command when the platform is disabled (docs/commands.md): the
 * three ways to enable it, and, when `WEBHOOK_ENABLED` is what turns it off, that variable and
 * where it is set (it wins over the wizard and `config.yaml`).
 * @param paths the home's files
 * @param enabledBy where the `enabled` value came from (`WebhookSettings.enabledBy`)
 * @returns the message, several lines
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
