/**
 * `agent webhook disable <name>` and `agent webhook enable <name>`: stop and resume serving a
 * subscription without removing it (docs/subscriptions.md#disabling). A disabled subscription
 * keeps its record and secret; the gateway answers its requests as an unknown name's (404).
 *
 * @module
 */
import { UsageError } from "../lib/errors.ts";
import { checkName } from "../lib/subscriptions/routes.ts";
import {
  setSubscriptionDisabled,
  untilGatewaySeesChange,
} from "../lib/subscriptions/subscription_edits.ts";
import type { Command, CommandContext } from "./_command.ts";
import { loadEnabledConfig } from "./_enabled_config.ts";
import { parseFlags } from "./_flags.ts";

const disableUsage = `Usage: agent webhook disable <name>

Stops serving the subscription <name>: the gateway answers its requests 404, as it does an
unknown name's, and runs nothing for them. Its record and secret are kept: agent webhook
enable <name> serves it again. A running gateway sees the change at once.`;

const enableUsage = `Usage: agent webhook enable <name>

Serves the subscription <name> again after agent webhook disable, with the secret it had.`;

/** `agent webhook disable`. */
export const webhookDisable: Command = {
  path: ["webhook", "disable"],
  summary: "Stop serving a subscription, keeping it and its secret",
  usage: disableUsage,
  run: (argv, ctx) => setDisabled(argv, ctx, true),
};

/** `agent webhook enable`. */
export const webhookEnable: Command = {
  path: ["webhook", "enable"],
  summary: "Serve a disabled subscription again",
  usage: enableUsage,
  run: (argv, ctx) => setDisabled(argv, ctx, false),
};

/**
 * Sets or clears a subscription's `disabled`, then waits until a running gateway uses it.
 * @param argv the command's arguments: one `<name>`
 * @param disabled what to set
 * @returns the exit code: 0, also when it already was so (said on stdout)
 * @throws UsageError for no name, a bad one, or a static route's (config.yaml decides those)
 * @throws NotFoundError when no subscription has the name
 */
async function setDisabled(
  argv: string[],
  ctx: CommandContext,
  disabled: boolean,
): Promise<number> {
  const action = disabled ? "disable" : "enable";
  const usage = disabled ? disableUsage : enableUsage;
  const { positionals } = parseFlags(argv, {}, usage);
  if (positionals.length !== 1) throw new UsageError(`Expected one <name>.\n\n${usage}`);
  const name = positionals[0];
  checkName(name, action);
  const config = await loadEnabledConfig(ctx);
  if (!config) return 1;
  const nowIso = new Date(ctx.now()).toISOString();
  const changed = await setSubscriptionDisabled(name, { disabled, config, nowIso });
  if (!changed) {
    ctx.stdout(`Subscription "${name}" is already ${action}d`);
    return 0;
  }
  await untilGatewaySeesChange(config);
  ctx.stdout(
    disabled
      ? `Disabled subscription "${name}": the gateway answers its requests 404, as an unknown ` +
        `name's. Its secret is kept; serve it again with: agent webhook enable ${name}`
      : `Enabled subscription "${name}": the gateway serves its requests again, with its secret`,
  );
  return 0;
}
