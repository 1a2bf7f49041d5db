/**
 * `agent gateway setup`: the wizard that enables the webhook platform and writes `config.yaml`
 * keeping its comments (CONTRACT §10). Interactive on a terminal; flags for scripts.
 *
 * @module
 */
import { type Config, isListenHost, LISTEN_HOST_RULE, loadConfig } from "../lib/config.ts";
import { hostAndPort } from "../lib/address.ts";
import { runningGatewayUrl } from "../lib/gateway_lock.ts";
import { type ConfigEdit, editConfigFile } from "../lib/config_file.ts";
import { setEnvValues } from "../lib/env_file.ts";
import { ConfigError, UsageError } from "../lib/errors.ts";
import type { Command, CommandContext } from "./_command.ts";
import { installedUnit } from "../lib/systemd_unit.ts";
import { generateSecret, parseFlags, wholeNumber } from "./_shared.ts";

const usage = `Usage: agent gateway setup [options]

On a terminal, asks: enable webhooks, host, port, global HMAC secret. Otherwise, or when flags
are given, applies the flags without asking:
  --enable / --disable     turn the webhook platform on or off
  --host HOST              listen address (127.0.0.1; 0.0.0.0 for all interfaces)
  --port N                 listen port (8644)
  --secret SECRET          global HMAC secret for static routes
  --generate-secret        generate a global secret (32 random bytes)
  --yes                    accept the defaults for everything not given
Tokens and home channels for the targets go to ~/.agent/.env (mode 0600):
  --telegram-token T  --telegram-home CHAT     --discord-token T  --discord-home CHANNEL
  --slack-token T     --slack-home CHANNEL     --github-token T   --gitlab-token T`;

/** Setup flags that are written to `.env`, and their variables. */
const ENV_FLAGS = {
  "telegram-token": "TELEGRAM_BOT_TOKEN",
  "telegram-home": "TELEGRAM_HOME_CHANNEL",
  "discord-token": "DISCORD_BOT_TOKEN",
  "discord-home": "DISCORD_HOME_CHANNEL",
  "slack-token": "SLACK_BOT_TOKEN",
  "slack-home": "SLACK_HOME_CHANNEL",
  "github-token": "GITHUB_TOKEN",
  "gitlab-token": "GITLAB_TOKEN",
} as const;

/** The chat platforms the wizard offers, with their token and home channel variables. */
const CHAT_PLATFORMS = {
  telegram: ["TELEGRAM_BOT_TOKEN", "TELEGRAM_HOME_CHANNEL"],
  discord: ["DISCORD_BOT_TOKEN", "DISCORD_HOME_CHANNEL"],
  slack: ["SLACK_BOT_TOKEN", "SLACK_HOME_CHANNEL"],
} as const;

const options = {
  enable: { type: "boolean" },
  disable: { type: "boolean" },
  host: { type: "string" },
  port: { type: "string" },
  secret: { type: "string" },
  "generate-secret": { type: "boolean" },
  yes: { type: "boolean" },
  ...Object.fromEntries(Object.keys(ENV_FLAGS).map((flag) => [flag, { type: "string" as const }])),
} as const;

/** What to write; an absent field leaves config.yaml as it is. */
interface Answers {
  enabled?: boolean;
  host?: string;
  port?: number;
  secret?: string;
  /** Whether `secret` was generated, rather than given: only a generated one is printed. */
  secretGenerated?: boolean;
  /** Variables for `.env`: tokens and home channels. */
  env: Record<string, string>;
}

/** `agent gateway setup`. */
export const gatewaySetup: Command = {
  path: ["gateway", "setup"],
  summary: "Enable the webhook platform (interactive wizard, or flags)",
  usage,
  async run(argv, ctx) {
    const { values, positionals } = parseFlags(argv, options, usage);
    if (positionals.length > 0) throw new UsageError(`Unexpected argument.\n\n${usage}`);
    if (values.enable && values.disable) {
      throw new UsageError("Give --enable or --disable, not both");
    }
    if (values.secret !== undefined && values["generate-secret"]) {
      throw new UsageError("Give --secret or --generate-secret, not both");
    }
    // Only config.yaml's own values: a WEBHOOK_* override in the environment is not saved.
    const config = await loadConfig(ctx.env, { fileOnly: true });
    for (const warning of config.warnings) ctx.stderr(`Warning: ${warning}`);
    const current = config.webhook;
    const flagged = Object.keys(values).length > 0;
    if (!flagged && !ctx.isTerminal) {
      throw new UsageError(`Not a terminal: pass flags, or --yes for the defaults.\n\n${usage}`);
    }
    const answers: Answers = flagged ? fromFlags(values, current) : await ask(ctx, current);
    if (answers.secret !== undefined && answers.secret.length < 8) {
      throw new UsageError("The global secret must be at least 8 characters, as a subscription's");
    }
    if (answers.host !== undefined && !isListenHost(answers.host)) {
      throw new UsageError(
        `The host must be ${LISTEN_HOST_RULE}, got "${answers.host}"`,
      );
    }
    const edits: ConfigEdit[] = [];
    const set = (path: string[], value: unknown) => {
      if (value !== undefined) edits.push({ path: ["platforms", "webhook", ...path], value });
    };
    set(["enabled"], answers.enabled);
    set(["extra", "host"], answers.host);
    set(["extra", "port"], answers.port);
    set(["extra", "secret"], answers.secret);
    const envKeys = Object.keys(answers.env);
    if (envKeys.length > 0) {
      await setEnvValues(config.paths.envFile, answers.env).catch((error) => {
        throw error instanceof TypeError ? new UsageError(error.message) : error;
      });
    }
    if (edits.length > 0) await editConfigFile(config.paths.config, edits);
    const after = (await loadConfig(ctx.env, { fileOnly: true })).webhook;
    const notes = await settingNotes(ctx, after, edits.length + envKeys.length > 0);
    ctx.stdout(
      [
        edits.length ? `Wrote ${config.paths.config}` : `${config.paths.config} unchanged`,
        `  webhooks: ${after.enabled ? "enabled" : "disabled"}`,
        `  listen:   ${hostAndPort(after.host, after.port)}`,
        `  secret:   ${secretSummary(answers, after.secret)}`,
        ...(envKeys.length ? [`Wrote ${envKeys.join(", ")} to ${config.paths.envFile}`] : []),
        "",
        after.enabled
          ? "Next: agent gateway run   (then: agent webhook subscribe <name>)"
          : "The gateway will refuse to start until webhooks are enabled.",
        ...notes,
      ].join("\n"),
    );
    return 0;
  },
};

/**
 * What the user must know for the settings just written to apply: a `WEBHOOK_*` value in the
 * environment or `.env` that overrides config.yaml, and a running gateway (it reads its
 * settings at start).
 * @param saved config.yaml's settings after the edit
 * @param changed whether anything was written
 */
async function settingNotes(
  ctx: CommandContext,
  saved: { enabled: boolean; host: string; port: number },
  changed: boolean,
): Promise<string[]> {
  let effective: Config;
  try {
    effective = await loadConfig(ctx.env);
  } catch (error) {
    // What was asked is written; a bad value elsewhere must not hide that.
    if (!(error instanceof ConfigError)) throw error;
    return ["", `Note: the gateway will not start until this is fixed: ${error.message}`];
  }
  const notes: string[] = [];
  const overridden = (variable: string, shown: string) =>
    notes.push(
      `Note: ${variable} in the environment or ${effective.paths.envFile} overrides this: ` +
        `the gateway will use ${shown}.`,
    );
  if (effective.webhook.enabled !== saved.enabled) {
    overridden("WEBHOOK_ENABLED", effective.webhook.enabled ? "enabled" : "disabled");
  }
  if (effective.webhook.host !== saved.host) overridden("WEBHOOK_HOST", effective.webhook.host);
  if (effective.webhook.port !== saved.port) {
    overridden("WEBHOOK_PORT", `${effective.webhook.port}`);
  }
  const running = changed ? await runningGatewayUrl(effective.paths.stateDb) : null;
  if (running) {
    const service = await installedUnit(ctx.env) ? " (systemctl --user restart agent-gateway)" : "";
    notes.push(
      `A gateway is running with this home (${running}): restart it${service} for these ` +
        "settings to apply.",
    );
  }
  return notes.length ? ["", ...notes] : [];
}

/**
 * The edits the flags ask for. `enabled` changes only with --enable, --disable or --yes;
 * --yes also fills in the defaults for what is not set yet (host, port, a generated secret).
 */
function fromFlags(
  values: Record<string, string | boolean | undefined>,
  current: { host: string; port: number; secret?: string },
): Answers {
  const yes = values.yes === true;
  const text = (flag: string) => values[flag] as string | undefined;
  const generate = values["generate-secret"] === true || (yes && !current.secret);
  return {
    enabled: values.disable ? false : values.enable || yes ? true : undefined,
    host: text("host") ?? (yes ? current.host : undefined),
    port: text("port") !== undefined ? parsePort(text("port")!) : yes ? current.port : undefined,
    secret: text("secret") ?? (generate ? generateSecret() : undefined),
    secretGenerated: text("secret") === undefined && generate,
    env: Object.fromEntries(
      Object.entries(ENV_FLAGS)
        .filter(([flag]) => typeof values[flag] === "string")
        .map(([flag, key]) => [key, values[flag] as string]),
    ),
  };
}

function parsePort(text: string): number {
  const port = wholeNumber(text.trim());
  if (!(port >= 1 && port <= 65535)) {
    throw new UsageError(
      `Port must be a whole number from 1 to 65535, not ${JSON.stringify(text)}`,
    );
  }
  return port;
}

async function ask(
  ctx: CommandContext,
  current: { enabled: boolean; host: string; port: number; secret?: string },
): Promise<Answers> {
  const read =
    (reader: (question: string) => Promise<string | null>, unseen = false) => async (q: string) => {
      const answer = await reader(q);
      if (answer === null) throw new InputEnded("Setup cancelled: no more input");
      const trimmed = answer.trim();
      // Blanks around a secret or token are a paste's, and left out; said, since it was not seen.
      if (unseen && trimmed !== "" && trimmed !== answer) {
        ctx.stdout("(the blanks around what was typed are left out)");
      }
      return trimmed;
    };
  const line = read(ctx.readLine);
  // Secrets and tokens are not shown as they are typed (nor left in the terminal's scrollback).
  const hidden = read(ctx.readSecret ?? ctx.readLine, true);
  const enabled = await askUntil(ctx, () => line("Enable the webhook platform? [Y/n] "), (a) => {
    if (a === "" || /^y(es)?$/i.test(a)) return true;
    if (/^no?$/i.test(a)) return false;
    throw new UsageError("Answer y or n");
  });
  const host = await askUntil(ctx, () => line(`Listen host [${current.host}] `), (a) => {
    if (a === "") return current.host;
    if (!isListenHost(a)) throw new UsageError(`The host must be ${LISTEN_HOST_RULE}`);
    return a;
  });
  const port = await askUntil(
    ctx,
    () => line(`Port [${current.port}] `),
    (a) => a === "" ? current.port : parsePort(a),
  );
  const proposal = current.secret ? "keep the current one" : "generate one";
  // Typed unseen, so typed twice: a typo would only show later, as every sender's 401.
  const secret = await askUntil(ctx, async () => {
    const typed = await hidden(`Global HMAC secret (not shown; Enter to ${proposal}) `);
    if (typed === "") return typed;
    const again = await hidden("The same secret again (not shown) ");
    if (again !== typed) throw new UsageError("The two secrets differ: type it again");
    return typed;
  }, (answer) => answer);
  return {
    enabled,
    host,
    port,
    secret: secret || (current.secret ? undefined : generateSecret()),
    secretGenerated: !secret && !current.secret,
    env: await askChatPlatform(ctx, line, hidden),
  };
}

/**
 * The summary's secret: a generated one in full (senders need it), one the user gave is not
 * echoed (the wizard reads it hidden).
 * @param saved the secret in `config.yaml` after the edit, if any
 */
function secretSummary(answers: Answers, saved: string | undefined): string {
  if (answers.secret === undefined) return saved ? "(unchanged)" : "(none)";
  return answers.secretGenerated ? answers.secret : "(set to the one given; not shown)";
}

/** Optionally asks for one chat platform's bot token and home channel. */
async function askChatPlatform(
  ctx: CommandContext,
  line: (question: string) => Promise<string>,
  hidden: (question: string) => Promise<string>,
): Promise<Record<string, string>> {
  const names = Object.keys(CHAT_PLATFORMS);
  const platform = await askUntil(
    ctx,
    () => line(`Chat platform for answers (${names.join("/")}, Enter to skip) `),
    (a) => {
      const name = a.toLowerCase();
      if (name === "" || Object.hasOwn(CHAT_PLATFORMS, name)) return name;
      throw new UsageError(`Answer one of ${names.join(", ")}, or press Enter`);
    },
  );
  if (!platform) return {};
  const [tokenKey, homeKey] = CHAT_PLATFORMS[platform as keyof typeof CHAT_PLATFORMS];
  const env: Record<string, string> = {};
  const token = await hidden(`${tokenKey} (not shown; Enter to skip) `);
  if (token) env[tokenKey] = token;
  const home = await line(`${homeKey}: default chat or channel id (Enter to skip) `);
  if (home) env[homeKey] = home;
  return env;
}

/** The end of input (Ctrl-D) at a question: the wizard stops instead of asking again. */
class InputEnded extends UsageError {}

/** Asks again, up to three times, while the answer does not parse. */
async function askUntil<T>(
  ctx: CommandContext,
  question: () => Promise<string>,
  parse: (answer: string) => T,
): Promise<T> {
  for (let tries = 1;; tries++) {
    try {
      return parse(await question());
    } catch (error) {
      if (!(error instanceof UsageError) || error instanceof InputEnded || tries >= 3) throw error;
      ctx.stdout(error.message);
    }
  }
}
