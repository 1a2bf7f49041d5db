/**
 * What the subscriptions page shows of each route (docs/dashboard.md#subscriptions): its URL,
 * events, target, mode, rate limit, whether the gateway serves it, the last 4 characters of its
 * secret (never more), and its events over the last 24 hours.
 *
 * @module
 */
import { webhookUrl } from "../../lib/config/address.ts";
import type { Config } from "../../lib/config/mod.ts";
import { ConfigError } from "../../lib/errors.ts";
import { runningGatewayUrl } from "../../lib/state/gateway_lock.ts";
import type { StateStore, SubscriptionCounts } from "../../lib/state/mod.ts";
import { currentSecret, type Route } from "../../lib/subscriptions/mod.ts";
import { routesAndHidden, unservedReason } from "../../lib/subscriptions/routes.ts";
import { homeChannelOf } from "../../lib/targets/mod.ts";

/** The window of the counts, in ms: a day. */
export const COUNTS_WINDOW_MS = 24 * 3_600_000;

/** One route as the page shows it. */
export interface RouteView {
  route: Route;
  /** The URL its sender posts to. */
  url: string;
  /** `all`, or the event types. */
  events: string;
  /** The target and where in it: `telegram chat 42, thread 7`, `slack (SLACK_HOME_CHANNEL)`. */
  target: string;
  /** `agent run` or `direct delivery`, with the format when one is set. */
  mode: string;
  /** `30/min`, or the gateway's default: `60/min (default)`. */
  rateLimit: string;
  /** `enabled`, `disabled`, or why the gateway does not serve it. */
  state: string;
  /** Whether the gateway serves its requests. */
  served: boolean;
  /** `…x9Qa`; or why there is none. Never the secret itself. */
  secret: string;
  /** Its events over the last 24 hours. */
  counts: SubscriptionCounts;
}

/** Every route, and what the page says of the records it cannot show. */
export interface RoutesView {
  routes: RouteView[];
  /** The subscription file's records the gateway cannot serve, with the reason, by name. */
  unusable: Map<string, string>;
  /** Subscriptions a static route of the same name hides. */
  hidden: string[];
  /** Why the subscription file cannot be read, when it cannot: the static routes are shown. */
  fileError?: string;
}

/**
 * Reads every route and its counts.
 * @param config the files, the static routes and the webhook listener's address
 * @param options `store`: the counts; `nowMs`: the end of their window
 * @returns the routes, static first, then the subscriptions by name
 * @throws StoreUnavailableError when the counts cannot be read
 */
export async function routesView(
  config: Pick<Config, "paths" | "webhook">,
  options: { store: Pick<StateStore, "subscriptionCounts">; nowMs: number },
): Promise<RoutesView> {
  let found: Awaited<ReturnType<typeof routesAndHidden>>;
  let fileError: string | undefined;
  try {
    found = await routesAndHidden(config);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    fileError = error.message;
    found = { routes: [...config.webhook.routes.values()], hidden: [], unusable: new Map() };
  }
  const counts = new Map(
    (await options.store.subscriptionCounts(options.nowMs - COUNTS_WINDOW_MS))
      .map((entry) => [entry.subscription, entry]),
  );
  const base = await senderBase(config);
  const routes = found.routes.map((route) => routeView(route, { config, base, counts }));
  return { routes, unusable: found.unusable, hidden: found.hidden, fileError };
}

/** One route's view (see {@link RouteView}). */
function routeView(
  route: Route,
  options: {
    config: Pick<Config, "webhook">;
    base: Config["webhook"];
    counts: Map<string, SubscriptionCounts>;
  },
): RouteView {
  const { config, base, counts } = options;
  const unserved = unservedReason(route, config.webhook.host);
  return {
    route,
    url: webhookUrl(base, route.name),
    events: route.events?.length ? route.events.join(", ") : "all",
    target: describeTarget(route),
    mode: (route.deliver_only ? "direct delivery" : "agent run") +
      (route.format ? `, ${route.format}` : ""),
    rateLimit: route.rate_limit
      ? `${route.rate_limit}/min`
      : `${config.webhook.rateLimitPerMinute}/min (default)`,
    state: route.disabled ? "disabled" : unserved ? `not served: ${unserved}` : "enabled",
    served: unserved === undefined,
    secret: secretHint(route, config.webhook.secret),
    counts: counts.get(route.name) ??
      { subscription: route.name, accepted: 0, delivered: 0, failed: 0 },
  };
}

/** Where a route's messages go, as `webhook list` says it. */
function describeTarget(route: Route): string {
  const deliver = route.deliver ?? "log";
  const { chat_id: chat, thread } = route.deliver_extra ?? {};
  const home = homeChannelOf(deliver);
  const where = chat ? ` chat ${chat}` : home ? ` (${home})` : "";
  return `${deliver}${where}${thread ? `, thread ${thread}` : ""}`;
}

/**
 * The secret as the page shows it: its last 4 characters, enough to tell two apart; a secret
 * of 8 characters or fewer shows none, as its last 4 would be half of it.
 * @param route the route
 * @param globalSecret `extra.secret`, which serves static routes that have none
 */
export function secretHint(route: Route, globalSecret: string | undefined): string {
  if (route.auth === "none") return "none (auth none)";
  const secret = currentSecret(route, globalSecret);
  if (secret === undefined) return "none: every request is refused (403)";
  const own = route.secret ? "" : " (the global secret)";
  return secret.length > 8 ? `…${secret.slice(-4)}${own}` : `set${own}`;
}

/**
 * The webhook address senders are given: `public_url` when set, else the port the running
 * gateway really listens on (it may have been started with `--port`).
 */
async function senderBase(config: Pick<Config, "paths" | "webhook">) {
  if (config.webhook.publicUrl) return config.webhook;
  const running = await runningGatewayUrl(config.paths.stateDb);
  const port = running === null ? NaN : Number(new URL(running).port || 80);
  return Number.isInteger(port) && port > 0 ? { ...config.webhook, port } : config.webhook;
}

/**
 * The URL a subscription's sender posts to, as the page shows it.
 * @param config the files and the webhook listener's address
 * @param name the subscription's name
 */
export async function senderUrl(
  config: Pick<Config, "paths" | "webhook">,
  name: string,
): Promise<string> {
  return webhookUrl(await senderBase(config), name);
}
