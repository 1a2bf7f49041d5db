/**
 * `agent webhook rotate-secret <name>`: gives a dynamic subscription a new secret and keeps the
 * old one valid for a grace period, so the sender can be switched over without losing events
 * (docs/commands.md).
 *
 * @module
 */
import { type Config, webhookUrl } from "../lib/config/mod.ts";
import { ConfigError, NotFoundError, UsageError } from "../lib/errors.ts";
import { generateSecret, type Subscription } from "../lib/subscriptions/mod.ts";
import { wrongFieldType } from "../lib/subscriptions/file_store.ts";
import { updateSubscriptionsOf } from "../lib/subscriptions/source.ts";
import { checkName, refuseStatic } from "../lib/subscriptions/routes.ts";
import type { Command } from "./_command.ts";
import { checkSecretForScheme } from "../lib/subscriptions/subscribe_checks.ts";
import { loadEnabledConfig } from "./_enabled_config.ts";
import { parseFlags } from "./_flags.ts";
import { advertisedWebhook } from "./_running_gateway.ts";
import { untilGatewaySeesChange } from "../lib/subscriptions/subscription_edits.ts";
import {
  DEFAULT_GRACE,
  describeRotation,
  parseGrace,
  type PreviousSecret,
  rotate,
  secretsOf,
} from "./_secret_rotation.ts";

const usage =
  `Usage: agent webhook rotate-secret <name> [--grace DURATION] [--secret SECRET] [--json]

Issues a new secret for the subscription <name>. The old secret stays valid for the grace
period so the sender can be updated; secrets of earlier rotations still valid end with it at
the latest, and those that have expired are dropped.

Options:
  --grace DURATION   how long the old secrets are still accepted: 30m, 24h, 7d, 90s, or 0 to
                     stop them all now (after a leak)
                     (default ${DEFAULT_GRACE}, at most 365d)
  --secret SECRET    the new secret (default: 32 random bytes, base64url)
  --json             print the result as JSON`;

const options = {
  grace: { type: "string" },
  secret: { type: "string" },
  json: { type: "boolean" },
} as const;

/** `agent webhook rotate-secret`. */
export const webhookRotateSecret: Command = {
  path: ["webhook", "rotate-secret"],
  summary: "Issue a new secret for a subscription, keeping the old one for a grace period",
  usage,
  async run(argv, ctx) {
    const { values, positionals } = parseFlags(argv, options, usage);
    if (positionals.length !== 1) throw new UsageError(`Expected one <name>.\n\n${usage}`);
    const name = positionals[0];
    checkName(name, "rotate the secret of");
    const graceMs = parseGrace(values.grace ?? DEFAULT_GRACE);
    if (values.secret !== undefined && values.secret.length < 8) {
      throw new UsageError("--secret must be at least 8 characters");
    }

    const config = await loadEnabledConfig(ctx);
    if (!config) return 1;
    refuseStatic(config, name, "rotate the secret of");
    const nowMs = ctx.now();
    const { record, retired, warnings } = await rotateStored(config, name, {
      secret: values.secret,
      nowMs,
      graceMs,
    });
    for (const warning of warnings) ctx.stderr(`Warning: ${warning}`);
    // With --grace 0 the old secret is refused from the moment this command returns.
    await untilGatewaySeesChange(config);

    const url = webhookUrl(await advertisedWebhook(config), name);
    ctx.stdout(
      values.json
        ? JSON.stringify({ name, webhook_url: url, ...secretsOf(record) }, null, 2)
        : describeRotation(name, url, record, retired, nowMs),
    );
    return 0;
  },
};

/**
 * Rotates the secret of the subscription `name` in the subscription file.
 * @param config the command's configuration (the subscription file)
 * @param name the subscription's
 * @param options `secret`: the new secret (generated when absent); `nowMs`: the clock, in
 *   milliseconds; `graceMs`: how long the old secret stays accepted
 * @returns the record after the rotation, the entry keeping the old secret if any, and
 *   warnings about a secret its scheme's libraries cannot sign with
 * @throws NotFoundError for no such subscription; ConfigError for a record with a field of the
 *   wrong type; UsageError for a `--secret` that is the current one or that its scheme cannot
 *   carry
 */
function rotateStored(
  config: Config,
  name: string,
  options: { secret: string | undefined; nowMs: number; graceMs: number },
): Promise<{ record: Subscription; retired?: PreviousSecret; warnings: string[] }> {
  const { nowMs, graceMs } = options;
  return updateSubscriptionsOf(config, (records) => {
    if (!Object.hasOwn(records, name)) {
      throw new NotFoundError(`No subscription named "${name}" (see: agent webhook list)`);
    }
    const wrongType = wrongFieldType(records[name]);
    if (wrongType !== undefined) {
      throw new ConfigError(`${wrongType}; fix that field in the file first`, {
        file: config.paths.subscriptions,
      });
    }
    const newSecret = options.secret ?? generateSecret(records[name].auth);
    if (records[name].secret === newSecret) {
      throw new UsageError(`--secret is the current secret of "${name}": nothing to rotate`);
    }
    // As subscribe checks it: once the grace ends, no sender could authenticate otherwise.
    const warnings = checkSecretForScheme(newSecret, records[name].auth);
    const result = rotate(records[name], newSecret, { nowMs, graceMs });
    records[name] = result.record;
    return { ...result, warnings };
  });
}
