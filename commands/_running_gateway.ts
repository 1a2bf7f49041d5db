/**
 * What the commands that change subscriptions need from a gateway running with the same home:
 * the port it really listens on, for the URLs printed for senders.
 *
 * @module
 */
import type { Config } from "../lib/config/mod.ts";
import { runningGatewayUrl } from "../lib/state/gateway_lock.ts";

/**
 * The webhook settings that URLs printed for senders are made from: the configuration's, but
 * with the port of the gateway running with this home when it listens on another one (started
 * with `gateway run --port`, or `WEBHOOK_PORT` in its own environment), so that the URL printed
 * is one that answers. A `public_url` is printed as configured.
 * @param config the command's configuration
 * @returns the webhook settings, with `port` replaced when a gateway runs on another
 * @example
 * ```ts
 * const url = webhookUrl(await advertisedWebhook(config), "gh");
 * // http://localhost:9000/webhooks/gh for a gateway started with --port 9000
 * ```
 */
export async function advertisedWebhook(config: Config): Promise<Config["webhook"]> {
  if (config.webhook.publicUrl) return config.webhook;
  const running = await runningGatewayUrl(config.paths.stateDb);
  // `URL.port` is empty for http's own port, 80.
  const port = running === null ? NaN : Number(new URL(running).port || 80);
  return Number.isInteger(port) && port > 0 && port !== config.webhook.port
    ? { ...config.webhook, port }
    : config.webhook;
}
