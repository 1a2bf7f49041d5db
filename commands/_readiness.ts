/**
 * Readiness (docs/commands.md#agent-doctor): whether what the gateway needs is in place, one
 * check at a time, each shown as one line, `✓ subject: what was found` or `✗ subject: what is
 * missing: the next step`. `agent doctor` prints them all; `gateway run` logs the failed ones
 * as warnings once it listens; `webhook subscribe` warns with the agent's.
 *
 * This module checks the agent provider and the listen address, and puts the checks together;
 * `_readiness_targets.ts` checks each subscription's target, `_readiness_files.ts` the state
 * database and the log folder. Nothing here contacts the LLM or a chat platform.
 *
 * @module
 */
import { DEFAULT_BASE_URL, programPath } from "../lib/agents/mod.ts";
import { hostAndPort, localUrl, unbracketed, type WebhookAddress } from "../lib/config/address.ts";
import type { HomePaths } from "../lib/config/home.ts";
import type { Config } from "../lib/config/mod.ts";
import { errorMessage } from "../lib/errors.ts";
import { logCheck, stateCheck } from "./_readiness_files.ts";
import { type Check, failed, passed } from "./_readiness_check.ts";
import { subscriptionChecks } from "./_readiness_targets.ts";

export { type Check, formatCheck } from "./_readiness_check.ts";

/**
 * Every readiness check of a configuration: the agent provider, each subscription's target,
 * the listen address and, with `files`, the state database and the log folder.
 * @param config the loaded configuration
 * @param options `webhook`: the address to check (the port a running gateway really listens
 *   on); `files`: also check the state database and the log folder (`gateway run` opens both
 *   as it starts, and stops when it cannot)
 * @returns the checks, in the order `agent doctor` prints them. The agent's blocks only when a
 *   subscription runs the agent; the address's never does (a sender on this machine, or a
 *   reverse proxy here, needs no public address)
 * @throws what reading the files throws, but for a subscription file that is not valid (a
 *   ConfigError), which is a failed check
 * @example
 * ```ts
 * const checks = await readinessChecks(config, { webhook: config.webhook, files: true });
 * const exitCode = checks.some((check) => !check.ok && check.blocking) ? 1 : 0;
 * ```
 */
export async function readinessChecks(
  config: Config,
  options: { webhook: WebhookAddress; files: boolean },
): Promise<Check[]> {
  const { checks: targets, routes } = await subscriptionChecks(config);
  const agent = agentCheck(config);
  return [
    { ...agent, blocking: routes.some((route) => !route.deliver_only) },
    ...targets,
    addressCheck(options.webhook, config.paths),
    ...options.files ? [await stateCheck(config), await logCheck(config.paths.log)] : [],
  ];
}

/**
 * Checks the agent provider as the gateway will run it: for `openai`, that the endpoint has
 * its key (api.openai.com needs `OPENAI_API_KEY`; another endpoint may need none); for
 * `command`, that the program is found and executable, as the gateway looks it up.
 * @param config the loaded configuration (its `agent` section, environment and files)
 * @returns the check, blocking; the text never holds the key nor the command's arguments
 */
export function agentCheck(config: Config): Check {
  const { agent, paths } = config;
  if (agent.provider === "command") return commandCheck(agent.command?.[0] ?? "", config);
  const where = `openai, model ${agent.model} at ${safeUrl(agent.baseUrl || DEFAULT_BASE_URL)}`;
  if (agent.apiKey) return passed("agent", `${where}, OPENAI_API_KEY set`);
  // As the openai runner decides: only the default endpoint is sure to need a key.
  if ((agent.baseUrl || DEFAULT_BASE_URL) !== DEFAULT_BASE_URL) {
    return passed("agent", `${where}, no OPENAI_API_KEY (an endpoint of your own may need none)`);
  }
  return failed(
    "agent",
    `OPENAI_API_KEY is not set; the gateway needs it to run the agent (${where}): add ` +
      `OPENAI_API_KEY=<your key> to ${paths.envFile} or the gateway's environment, then ` +
      "restart a running gateway",
    true,
  );
}

/** The `command` provider's check: its program found on the gateway's PATH and executable. */
function commandCheck(program: string, config: Config): Check {
  const setting = `agent.command in ${config.paths.config}`;
  try {
    // Looked up as the gateway starts it (`lib/agents/own_session.ts`).
    const path = programPath(program, config.env.PATH ?? "/usr/bin:/bin");
    return passed("agent", `command ${path}`);
  } catch (error) {
    const found = error instanceof Deno.errors.PermissionDenied;
    const next = found
      ? `make it executable (chmod +x), or point ${setting} at a program`
      : `install it, or give its full path in ${setting}`;
    return failed(
      "agent",
      `the agent command "${program}" cannot run: ${errorMessage(error)}; ${next}`,
      true,
    );
  }
}

/**
 * Which provider, model and endpoint the gateway runs the agent with, for its start banner.
 * @param agent the `agent` settings
 * @returns `openai, model gpt-4o-mini, base URL https://api.openai.com/v1`, or
 *   `command /usr/local/bin/llm` (the program only: its arguments may hold a key)
 */
export function agentSummary(agent: Config["agent"]): string {
  if (agent.provider === "command") return `command ${agent.command?.[0] ?? ""}`;
  return `openai, model ${agent.model}, base URL ${safeUrl(agent.baseUrl || DEFAULT_BASE_URL)}`;
}

/** A URL without the user name and password it may carry. */
function safeUrl(url: string): string {
  const parsed = URL.parse(url);
  if (!parsed || (!parsed.username && !parsed.password)) return url;
  parsed.username = "";
  parsed.password = "";
  return parsed.href;
}

/**
 * Checks that senders can reach the gateway: an address on this machine only (127.0.0.1,
 * ::1, localhost) without `public_url` needs a tunnel or a reverse proxy, and the check shows
 * the commands that make one; a wildcard address without `public_url` makes `subscribe` print
 * `localhost` URLs.
 * @param webhook the listen address and `public_url`
 * @param paths the home's files, named in the next step
 * @returns the check, never blocking
 */
export function addressCheck(webhook: WebhookAddress, paths: HomePaths): Check {
  const { host, port, publicUrl } = webhook;
  const listens = hostAndPort(host, port);
  if (publicUrl) {
    return passed("address", `listens on ${listens}; senders use ${publicUrl}/webhooks/<name>`);
  }
  const setIt = "set the https address senders use as public_url: WEBHOOK_PUBLIC_URL=" +
    `https://<host> in ${paths.envFile}, or platforms.webhook.extra.public_url in ${paths.config}`;
  const bare = unbracketed(host);
  if (bare === "localhost" || bare === "::1" || /^127\./.test(bare)) {
    const local = localUrl(host, port);
    return failed(
      "address",
      [
        `listens on ${listens}, which only this machine reaches, and public_url is not set: ` +
        "senders elsewhere (GitHub, Stripe) need a tunnel or a reverse proxy, e.g.",
        `    cloudflared tunnel --url ${local}`,
        `    ngrok http ${bare === "127.0.0.1" || bare === "localhost" ? port : local}`,
        `  then ${setIt}`,
      ].join("\n"),
      false,
    );
  }
  if (bare === "0.0.0.0" || bare === "::") {
    return failed(
      "address",
      `listens on every address at port ${port}, and public_url is not set: subscribe prints ` +
        `http://localhost:${port}/webhooks/<name>, which senders elsewhere cannot use; ${setIt}`,
      false,
    );
  }
  return passed(
    "address",
    `listens on ${listens}; subscribe prints http://${listens}/webhooks/<name> ` +
      "(set public_url when senders use another address)",
  );
}
