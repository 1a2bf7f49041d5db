/**
 * Removing, disabling and enabling a subscription of the subscription file: what
 * `agent webhook remove`, `disable` and `enable` do, and the dashboard's buttons of the same
 * names (docs/subscriptions.md#disabling, docs/dashboard.md#subscriptions), with one set of
 * checks and messages; and the wait, after any change, until a running gateway uses it.
 *
 * @module
 */
import type { Config } from "../config/mod.ts";
import { NotFoundError } from "../errors.ts";
import { gatewayRunning } from "../state/gateway_lock.ts";
import { SUBSCRIPTION_RECHECK_MS } from "./file_cache.ts";
import type { SubscriptionRecords } from "./file_store.ts";
import type { Subscription } from "./mod.ts";
import { checkName, refuseStatic } from "./routes.ts";
import { updateSubscriptionsOf } from "./source.ts";

/** What an edit reads: the subscription file's place and the static routes of config.yaml. */
export type EditConfig = Pick<Config, "paths" | "webhook"> & Partial<Pick<Config, "env">>;

/**
 * Removes the subscription `name` from the subscription file.
 * @param name the subscription's name
 * @param config where the file is, and the static routes (which cannot be removed here)
 * @throws UsageError for a name that breaks the naming rule, or a static route's
 * @throws NotFoundError when no subscription has the name
 * @throws ConfigError when the file cannot be read or written
 */
export async function removeSubscription(name: string, config: EditConfig): Promise<void> {
  checkName(name, "remove");
  refuseStatic(config, name, "remove");
  await updateSubscriptionsOf(config, (records) => {
    existingRecord(records, name);
    delete records[name];
  });
}

/**
 * Sets or clears the `disabled` of subscription `name`: a disabled subscription keeps its record
 * and secret, and the gateway answers its requests as an unknown name's (404).
 * @param name the subscription's name
 * @param options `disabled`: what to set; `config`: as for {@link removeSubscription};
 *   `nowIso`: the time of the change, stored as `updated_at` (ISO 8601 UTC)
 * @returns true when it changed; false when it already was so (nothing is written)
 * @throws UsageError for a name that breaks the naming rule, or a static route's
 * @throws NotFoundError when no subscription has the name
 * @throws ConfigError when the file cannot be read or written
 * @example
 * ```ts
 * const changed = await setSubscriptionDisabled("gh", { disabled: true, config, nowIso });
 * if (!changed) console.log('Subscription "gh" is already disabled');
 * ```
 */
export async function setSubscriptionDisabled(
  name: string,
  options: { disabled: boolean; config: EditConfig; nowIso: string },
): Promise<boolean> {
  const { disabled, config, nowIso } = options;
  const action = disabled ? "disable" : "enable";
  checkName(name, action);
  refuseStatic(config, name, action);
  return await updateSubscriptionsOf(config, (records) => {
    const record = existingRecord(records, name);
    if ((record.disabled === true) === disabled) return false;
    if (disabled) record.disabled = true;
    else delete record.disabled;
    record.updated_at = nowIso;
    return true;
  });
}

/** The record of `name`, or a NotFoundError that says where to look. */
function existingRecord(records: SubscriptionRecords, name: string): Subscription {
  if (!Object.hasOwn(records, name)) {
    throw new NotFoundError(`No subscription named "${name}" (see: agent webhook list)`);
  }
  return records[name];
}

/**
 * Waits, after a subscription change was written, until a gateway running with this home uses
 * it: the gateway trusts its copy of the subscriptions for up to
 * {@link SUBSCRIPTION_RECHECK_MS}, so without this wait a removed subscription, a revoked
 * secret or a narrower filter would still pass for that long after the command or the page
 * answered. Returns at once when no gateway runs here.
 * @param config the state folder, where the gateway's lock is
 */
export async function untilGatewaySeesChange(config: Pick<Config, "paths">): Promise<void> {
  if (!(await gatewayRunning(config.paths.stateDb))) return;
  await new Promise((resolve) => setTimeout(resolve, SUBSCRIPTION_RECHECK_MS + 20));
}
