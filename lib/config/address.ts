/**
 * Host addresses as people write them and as URLs need them: an IPv6 address in brackets
 * (`[::1]:8644`), the URL at which this machine reaches a listening server, the base of the
 * webhook URLs that commands print (docs/subscriptions.md), and which hosts may be listened on.
 *
 * @module
 */

/** What {@link isListenHost} accepts, for error messages. */
export const LISTEN_HOST_RULE = "a host name or an IP address (127.0.0.1, 0.0.0.0, ::)";

/**
 * Tells whether `host` can be an address to listen on: a host name, an IPv4 address or an IPv6
 * one (bracketed or not).
 * @param host a host name or address, as configured
 * @returns true when it may be listened on
 */
export function isListenHost(host: string): boolean {
  const bare = unbracketed(host);
  return /^[A-Za-z0-9.-]+$/.test(bare) || (bare.includes(":") && /^[0-9A-Fa-f:.]+$/.test(bare));
}

/**
 * A host without the brackets an IPv6 address may be written in (`[::1]` → `::1`).
 * @param host a host name or address, as configured
 * @returns the host, its brackets removed
 */
export function unbracketed(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

/**
 * A host as it goes before `:port` in a URL: an IPv6 address in brackets (`::1` → `[::1]`),
 * any other host as it is. The host is taken as it is given: {@link unbracketed} first when it
 * may already have them.
 * @param host a host name or address without brackets
 * @returns the host, an IPv6 address in brackets
 */
export function bracketed(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}

/**
 * `host:port` as people write it: an IPv6 address in brackets, once (`[::1]:8644`), whether the
 * host was configured with them or not.
 * @param host a host name or address, as configured
 * @param port the port
 * @returns `host:port`
 */
export function hostAndPort(host: string, port: number): string {
  return `${bracketed(unbracketed(host))}:${port}`;
}

/**
 * The URL at which this machine reaches a server listening on `host` and `port`: loopback for
 * a wildcard address (`0.0.0.0` → `127.0.0.1`, `::` → `[::1]`), IPv6 in brackets.
 * @param host the address listened on, as configured or as the server reports it
 * @param port the port
 * @returns a URL without a trailing slash
 * @example localUrl("::", 8644) // "http://[::1]:8644"
 */
export function localUrl(host: string, port: number): string {
  const bare = unbracketed(host);
  const reachable = bare === "0.0.0.0" ? "127.0.0.1" : bare === "::" ? "::1" : bare;
  return `http://${bracketed(reachable)}:${port}`;
}

/** Where a webhook is reached: the `platforms.webhook` settings that make its URL. */
export interface WebhookAddress {
  /** Base of the URLs that `subscribe` prints, e.g. `https://hooks.example.com`. */
  publicUrl?: string;
  /** Listen address. */
  host: string;
  /** Listen port. */
  port: number;
}

const LOCAL_HOSTS = new Set(["0.0.0.0", "::", "[::]", "127.0.0.1", "::1", "[::1]", "localhost"]);

/**
 * The base of webhook URLs (docs/subscriptions.md): `public_url`, else
 * `http://localhost:<port>` when the host is a wildcard or loopback address, else
 * `http://<host>:<port>`. Other addresses of 127.0.0.0/8 are printed as they are: `localhost`
 * would reach 127.0.0.1, not them.
 * @param webhook the merged webhook settings
 * @returns a URL without a trailing slash
 * @example webhookBaseUrl({ host: "0.0.0.0", port: 8644 }) // "http://localhost:8644"
 */
export function webhookBaseUrl(webhook: WebhookAddress): string {
  if (webhook.publicUrl) return webhook.publicUrl;
  // A host may be configured with its brackets (`[2001:db8::1]`) or without.
  const host = LOCAL_HOSTS.has(webhook.host) ? "localhost" : bracketed(unbracketed(webhook.host));
  return `http://${host}:${webhook.port}`;
}

/**
 * The webhook URL of one subscription: base + `/webhooks/<name>`.
 * @param webhook the merged webhook settings
 * @param name a valid subscription name
 * @returns the URL
 * @example webhookUrl({ publicUrl: "https://hooks.example.com", host: "::", port: 8644 }, "gh")
 *   // "https://hooks.example.com/webhooks/gh"
 */
export function webhookUrl(webhook: WebhookAddress, name: string): string {
  return `${webhookBaseUrl(webhook)}/webhooks/${name}`;
}
