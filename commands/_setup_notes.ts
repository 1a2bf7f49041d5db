/**
 * The notes `agent gateway setup` adds after its summary: what stands between the settings just
 * written and the gateway that will use them.
 *
 * @module
 */
import { type Config, loadConfig } from "../lib/config/mod.ts";
import { ConfigError } from "../lib/errors.ts";
import { runningGatewayUrl } from "../lib/state/gateway_lock.ts";
import { installedUnit } from "./_systemd_unit.ts";
import type { CommandContext } from "./_command.ts";

/**
 * What the user must know for the settings just written to apply: a `WEBHOOK_*` value in the
 * environment or `.env` that overrides config.yaml, and a running gateway (it reads its
 * settings at start).
 * @param ctx the command's context (its environment)
 * @param options `saved`: config.yaml's settings after the edit; `changed`: whether anything
 *   was written
 * @returns the notes' lines, after a blank one; none when there is nothing to say
 * @throws what loading the configuration throws, but a ConfigError (said as a note instead)
 */
export async function settingNotes(
  ctx: CommandContext,
  options: {
    saved: { enabled: boolean; host: string; port: number; secret?: string };
    changed: boolean;
  },
): Promise<string[]> {
  const { saved, changed } = options;
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
  // Senders signing with the secret just written would get 401.
  if (effective.webhook.secret !== saved.secret) {
    overridden("WEBHOOK_SECRET", effective.webhook.secret ? "its secret (not shown)" : "none");
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
