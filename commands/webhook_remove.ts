/**
 * `agent webhook remove <name>`: deletes a dynamic subscription (docs/subscriptions.md).
 *
 * @module
 */
import { NotFoundError, UsageError } from "../lib/errors.ts";
import { checkName, refuseStatic } from "../lib/subscriptions/routes.ts";
import { updateSubscriptionsOf } from "../lib/subscriptions/source.ts";
import type { Command } from "./_command.ts";
import { loadEnabledConfig } from "./_enabled_config.ts";
import { parseFlags } from "./_flags.ts";
import { untilGatewaySeesChange } from "./_running_gateway.ts";

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
    refuseStatic(config, name, "remove");
    await updateSubscriptionsOf(config, (records) => {
      if (!Object.hasOwn(records, name)) {
        throw new NotFoundError(`No subscription named "${name}" (see: agent webhook list)`);
      }
      delete records[name];
    });
    await untilGatewaySeesChange(config);
    ctx.stdout(`Removed subscription "${name}"`);
    return 0;
  },
};
