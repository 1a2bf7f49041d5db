/**
 * `agent doctor`: checks what the gateway needs, one line per check with the next step
 * (docs/commands.md#agent-doctor).
 *
 * @module
 */
import { type Config, loadConfig } from "../lib/config/mod.ts";
import { ConfigError, UsageError } from "../lib/errors.ts";
import type { Command } from "./_command.ts";
import { parseFlags } from "./_flags.ts";
import { type Check, failed, passed } from "./_readiness_check.ts";
import { formatCheck, readinessChecks } from "./_readiness.ts";
import { advertisedWebhook } from "./_running_gateway.ts";

const usage = `Usage: agent doctor

Checks what the gateway needs and prints one line per check, ✓ or ✗ with the next step:
the configuration, the agent provider (openai: its key, model and base URL; command: the
program found and executable), each subscription's target (its token, its chat id, a home
target for origin), the listen address and public_url, the state database and the log folder.
Nothing is sent to the LLM or the chat platforms.

Exits 1 when something a subscription needs is missing, 0 otherwise (a ✗ about the address
alone does not: a sender on this machine, or a reverse proxy here, needs no public address).`;

/** `agent doctor`. */
export const doctor: Command = {
  path: ["doctor"],
  summary: "Check the agent provider, target tokens, address and files the gateway needs",
  usage,
  async run(argv, ctx) {
    const { positionals } = parseFlags(argv, {}, usage);
    if (positionals.length > 0) throw new UsageError(`Unexpected argument.\n\n${usage}`);
    let config: Config;
    try {
      config = await loadConfig(ctx.env);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      ctx.stdout(formatCheck(failed("config", error.message, true)));
      return 1;
    }
    const checks = [
      ...configChecks(config),
      ...await readinessChecks(config, { webhook: await advertisedWebhook(config), files: true }),
    ];
    ctx.stdout(checks.map(formatCheck).join("\n"));
    const blocking = checks.filter((check) => !check.ok && check.blocking).length;
    const notes = checks.filter((check) => !check.ok && !check.blocking).length;
    ctx.stdout(
      blocking > 0
        ? `\nNot ready: ${blocking} of the ✗ lines above stop subscriptions from working.`
        : notes > 0
        ? "\nReady for the subscriptions there are; the ✗ lines above are worth a look."
        : "\nReady.",
    );
    return blocking > 0 ? 1 : 0;
  },
};

/**
 * The configuration's own checks: the keys no version reads, and whether the webhook
 * platform is enabled (a home without `config.yaml` gets one from `gateway run`).
 */
function configChecks(config: Config): Check[] {
  const { paths, webhook } = config;
  const unknown = config.warnings.map((warning) => failed("config", warning, false));
  if (!config.configFileExists) {
    return [
      ...unknown,
      passed(
        "config",
        `${paths.config} does not exist yet; gateway run creates it, enabling webhooks`,
      ),
    ];
  }
  if (webhook.enabled) return [...unknown, passed("config", `${paths.config}, webhooks enabled`)];
  const by = webhook.enabledBy;
  return [
    ...unknown,
    failed(
      "config",
      `webhooks are not enabled${by ? ` (${by.key} in ${by.file})` : ""}: run agent gateway ` +
        "setup, or set it to true (docs/configuration.md)",
      true,
    ),
  ];
}
