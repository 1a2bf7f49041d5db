/**
 * What `agent gateway setup` writes, and how its flags turn into it: the answers, their checks
 * and the `config.yaml` edits they make.
 *
 * @module
 */
import { isListenHost, LISTEN_HOST_RULE } from "../lib/config/mod.ts";
import type { ConfigEdit } from "../lib/config/config_file.ts";
import { UsageError } from "../lib/errors.ts";
import { validateTarget } from "../lib/targets/mod.ts";
import { generateSecret } from "../lib/subscriptions/mod.ts";
import { wholeNumber } from "./_flags.ts";

/** Setup flags that are written to `.env`, and their variables. */
export const ENV_FLAGS = {
  "telegram-token": "TELEGRAM_BOT_TOKEN",
  "telegram-home": "TELEGRAM_HOME_CHANNEL",
  "discord-token": "DISCORD_BOT_TOKEN",
  "discord-home": "DISCORD_HOME_CHANNEL",
  "slack-token": "SLACK_BOT_TOKEN",
  "slack-home": "SLACK_HOME_CHANNEL",
  "github-token": "GITHUB_TOKEN",
  "gitlab-token": "GITLAB_TOKEN",
} as const;

/** What to write; an absent field leaves config.yaml as it is. */
export interface Answers {
  enabled?: boolean;
  host?: string;
  port?: number;
  secret?: string;
  /** Whether `secret` was generated, rather than given: only a generated one is printed. */
  secretGenerated?: boolean;
  /** Variables for `.env`: tokens and home channels. */
  env: Record<string, string>;
}

/** The parsed setup flags, by name. */
type FlagValues = Record<string, string | boolean | undefined>;

/**
 * Refuses flags that contradict each other.
 * @param values the parsed flags
 * @throws UsageError for --enable with --disable, or --secret with --generate-secret
 */
export function checkFlagPairs(values: FlagValues): void {
  if (values.enable && values.disable) {
    throw new UsageError("Give --enable or --disable, not both");
  }
  if (values.secret !== undefined && values["generate-secret"]) {
    throw new UsageError("Give --secret or --generate-secret, not both");
  }
}

/**
 * The edits the flags ask for. `enabled` changes only with --enable, --disable or --yes;
 * --yes also fills in the defaults for what is not set yet (host, port, a generated secret).
 * @param values the parsed flags
 * @param current config.yaml's webhook settings, for the defaults --yes takes
 * @returns the answers the flags give
 * @throws UsageError for a --port that is no port
 */
export function fromFlags(
  values: FlagValues,
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

/**
 * Reads a listen port, from a flag or the wizard.
 * @param text the port as typed (blanks around it are ignored)
 * @returns the port, 1 to 65535
 * @throws UsageError for anything else
 */
export function parsePort(text: string): number {
  const port = wholeNumber(text.trim());
  if (!(port >= 1 && port <= 65535)) {
    throw new UsageError(
      `Port must be a whole number from 1 to 65535, not ${JSON.stringify(text)}`,
    );
  }
  return port;
}

/**
 * Checks the answers before anything is written.
 * @param answers from the flags or the wizard
 * @throws UsageError for a secret shorter than 8 characters, a host that is no listen address,
 *   or a home channel of the wrong shape for its platform (as `--deliver-chat-id` is checked)
 */
export function checkAnswers(answers: Answers): void {
  for (const [flag, variable] of Object.entries(ENV_FLAGS)) {
    const home = answers.env[variable];
    if (!flag.endsWith("-home") || home === undefined) continue;
    try {
      // Every delivery falling back to a malformed home channel would fail for good.
      validateTarget({
        target: flag.slice(0, -"-home".length),
        chatId: home,
        deliverOnly: false,
        env: {},
      });
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      throw new UsageError(error.message.replace(/^--deliver-chat-id/, `--${flag}`));
    }
  }
  if (answers.secret !== undefined && answers.secret.length < 8) {
    throw new UsageError("The global secret must be at least 8 characters, as a subscription's");
  }
  if (answers.host !== undefined && !isListenHost(answers.host)) {
    throw new UsageError(
      `The host must be ${LISTEN_HOST_RULE}, got "${answers.host}"`,
    );
  }
}

/**
 * The `config.yaml` edits the answers make, under `platforms.webhook`.
 * @param answers checked answers
 * @returns one edit per answer given; none when nothing is to change
 */
export function configEdits(answers: Answers): ConfigEdit[] {
  const edits: ConfigEdit[] = [];
  const set = (path: string[], value: unknown) => {
    if (value !== undefined) edits.push({ path: ["platforms", "webhook", ...path], value });
  };
  set(["enabled"], answers.enabled);
  set(["extra", "host"], answers.host);
  set(["extra", "port"], answers.port);
  set(["extra", "secret"], answers.secret);
  return edits;
}
