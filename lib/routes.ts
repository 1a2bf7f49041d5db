/**
 * The routes the gateway serves: static routes from `config.yaml` first, then the dynamic
 * subscriptions, which can never shadow a static route (CONTRACT §3).
 *
 * @module
 */
import type { Config } from "./config.ts";
import { UsageError } from "./errors.ts";
import { NAME_PATTERN, type Route } from "./subscription.ts";
import { readSubscriptions, type SubscriptionRecords } from "./subscription_store.ts";

/**
 * The route called `name`: the static one if `config.yaml` defines it, else the subscription.
 * @param records the dynamic subscriptions
 * @param staticRoutes the routes of `config.yaml`
 */
export function findRoute(
  name: string,
  records: SubscriptionRecords,
  staticRoutes: ReadonlyMap<string, Route>,
): Route | undefined {
  const fixed = staticRoutes.get(name);
  if (fixed) return fixed;
  return Object.hasOwn(records, name) ? { ...records[name], name, origin: "dynamic" } : undefined;
}

/**
 * Static routes, then dynamic subscriptions sorted by name; a dynamic record with the name of
 * a static route is skipped, as the gateway skips it.
 * @throws ConfigError when the subscription file is corrupt
 */
export async function allRoutes(config: Config): Promise<Route[]> {
  const records = await readSubscriptions(config.paths.subscriptions);
  const dynamic = Object.keys(records)
    .filter((name) => !config.webhook.routes.has(name))
    .sort()
    .map((name): Route => ({ ...records[name], name, origin: "dynamic" }));
  return [...config.webhook.routes.values(), ...dynamic];
}

/**
 * Refuses a subscription name that breaks the naming rule (CONTRACT §3), with the rule.
 * @param action what was asked, for the message: `subscribe`, `remove`, ...
 * @throws UsageError when `name` does not match {@link NAME_PATTERN}
 */
export function checkName(name: string, action: string): void {
  if (NAME_PATTERN.test(name)) return;
  throw new UsageError(
    `Cannot ${action} ${JSON.stringify(name)}: name must match ${NAME_PATTERN.source}`,
  );
}

/**
 * Refuses a CLI change to a route that `config.yaml` defines.
 * @param action what was asked, for the message: `subscribe`, `remove`, ...
 * @throws UsageError when `name` is a static route
 */
export function refuseStatic(config: Config, name: string, action: string): void {
  if (!config.webhook.routes.has(name)) return;
  throw new UsageError(
    `Cannot ${action} "${name}": it is defined in config.yaml (${config.paths.config}); edit it there`,
  );
}
