/**
 * `agent webhook remove <name>`: deletes a dynamic subscription (docs/subscriptions.md).
 *
 * @module
 */
import { UsageError } from "../lib/errors.ts";
import { checkName } from "../lib/subscriptions/routes.ts";
import {
  removeSubscription,
  untilGatewaySeesChange,
} from "../lib/subscriptions/subscription_edits.ts";
import type { Command } from "./_command.ts";
import { loadEnabledConfig } from "./_enabled_config.ts";
import { parseFlags } from "./_flags.ts";

const usage = `Usage: agent webhook remove <name>

Removes the subscription <name>. Static routes are edited in config.yaml instead.`;

/** `agent webhook remove`. */
export const webhookRemove: Command = {
  path: ["webhook", "remove"],
  summary: "Remove a webhook subscription",
  usage,
  async run(argv, ctx) {
    const { positionals } = parseFlags(argv, {}, usage);
    if (positionals.length !== 1) throw new UsageError(`Expected one <name>.\n\n${usage}`);
    const name = positionals[0];
    checkName(name, "remove");
    const config = await loadEnabledConfig(ctx);
    if (!config) return 1;
    await removeSubscription(name, config);
    await untilGatewaySeesChange(config);
    ctx.stdout(`Removed subscription "${name}"`);
    return 0;
  },
};
