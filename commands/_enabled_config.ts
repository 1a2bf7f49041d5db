/**
 * The configuration every `webhook` command starts from: loaded, its warnings printed, and the
 * webhook platform checked to be enabled (docs/commands.md).
 *
 * @module
 */
import { type Config, loadConfig, platformDisabledMessage } from "../lib/config/mod.ts";
import type { CommandContext } from "./_command.ts";

/**
 * Loads the configuration, prints its warnings (unknown keys) on standard error and checks that
 * the webhook platform is enabled.
 * @param ctx the command's context: its environment, and standard error for the warnings
 * @returns the configuration, or null after printing the "not enabled" message (the command
 *   then exits 1)
 * @throws ConfigError for malformed configuration files
 * @example
 * ```ts
 * const config = await loadEnabledConfig(ctx);
 * if (!config) return 1;
 * ```
 */
export async function loadEnabledConfig(ctx: CommandContext): Promise<Config | null> {
  const config = await loadConfig(ctx.env);
  for (const warning of config.warnings) ctx.stderr(`Warning: ${warning}`);
  if (config.webhook.enabled) return config;
  ctx.stderr(platformDisabledMessage(config.paths, config.webhook.enabledBy));
  return null;
}
