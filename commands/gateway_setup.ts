/**
 * `agent gateway setup`: the wizard that enables the webhook platform and writes `config.yaml`
 * keeping its comments (docs/commands.md). Interactive on a terminal; flags for scripts.
 *
 * @module
 */
import { hostAndPort } from "../lib/config/address.ts";
import { type Config, loadConfig } from "../lib/config/mod.ts";
import { editConfigFile } from "../lib/config/config_file.ts";
import { setEnvValues } from "../lib/config/env_file.ts";
import { UsageError } from "../lib/errors.ts";
import type { Command } from "./_command.ts";
import {
  type Answers,
  checkAnswers,
  checkFlagPairs,
  configEdits,
  ENV_FLAGS,
  fromFlags,
} from "./_setup_answers.ts";
import { settingNotes } from "./_setup_notes.ts";
import { askSetup } from "./_setup_wizard.ts";
import { parseFlags } from "./_flags.ts";

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

/** `agent gateway setup`. */
export const gatewaySetup: Command = {
  path: ["gateway", "setup"],
  summary: "Enable the webhook platform (interactive wizard, or flags)",
  usage,
  async run(argv, ctx) {
    const { values, positionals } = parseFlags(argv, options, usage);
    if (positionals.length > 0) throw new UsageError(`Unexpected argument.\n\n${usage}`);
    checkFlagPairs(values);
    // Only config.yaml's own values: a WEBHOOK_* override in the environment is not saved.
    const config = await loadConfig(ctx.env, { fileOnly: true });
    for (const warning of config.warnings) ctx.stderr(`Warning: ${warning}`);
    const current = config.webhook;
    const flagged = Object.keys(values).length > 0;
    if (!flagged && !ctx.isTerminal) {
      throw new UsageError(`Not a terminal: pass flags, or --yes for the defaults.\n\n${usage}`);
    }
    const answers: Answers = flagged ? fromFlags(values, current) : await askSetup(ctx, current);
    checkAnswers(answers);
    const edits = configEdits(answers);
    const envKeys = Object.keys(answers.env);
    if (envKeys.length > 0) {
      await setEnvValues(config.paths.envFile, answers.env).catch((error) => {
        throw error instanceof TypeError ? new UsageError(error.message) : error;
      });
    }
    if (edits.length > 0) await editConfigFile(config.paths.config, edits);
    const after = (await loadConfig(ctx.env, { fileOnly: true })).webhook;
    const changed = edits.length + envKeys.length > 0;
    const notes = await settingNotes(ctx, { saved: after, changed });
    ctx.stdout(
      [...summary(answers, { paths: config.paths, after, edited: edits.length > 0 }), ...notes]
        .join("\n"),
    );
    return 0;
  },
};

/**
 * What setup did, and what to do next.
 * @param answers what was asked for
 * @param options `paths`: where config.yaml and `.env` are; `after`: config.yaml's settings
 *   after the edit; `edited`: whether config.yaml was written
 * @returns the summary's lines
 */
function summary(
  answers: Answers,
  options: { paths: Config["paths"]; after: Config["webhook"]; edited: boolean },
): string[] {
  const { paths, after, edited } = options;
  const envKeys = Object.keys(answers.env);
  return [
    edited ? `Wrote ${paths.config}` : `${paths.config} unchanged`,
    `  webhooks: ${after.enabled ? "enabled" : "disabled"}`,
    `  listen:   ${hostAndPort(after.host, after.port)}`,
    `  secret:   ${secretSummary(answers, after.secret)}`,
    ...(envKeys.length ? [`Wrote ${envKeys.join(", ")} to ${paths.envFile}`] : []),
    "",
    after.enabled
      ? "Next: agent gateway run   (then: agent webhook subscribe <name>)"
      : "The gateway will refuse to start until webhooks are enabled.",
  ];
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
