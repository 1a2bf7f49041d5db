/**
 * `agent dashboard`: prints where the dashboard listens and a link that logs you in, made from
 * the token in `state/dashboard.token`; `--token` prints the token itself, `--rotate` replaces
 * it and so ends every session (docs/dashboard.md).
 *
 * @module
 */
import { type Config, loadConfig } from "../lib/config/mod.ts";
import { localUrl } from "../lib/config/address.ts";
import { UsageError } from "../lib/errors.ts";
import { gatewayRunning } from "../lib/state/gateway_lock.ts";
import { runningDashboardUrl } from "../server/dashboard/listener.ts";
import {
  dashboardTokenPath,
  ensureToken,
  makeLoginCode,
  rotateToken,
} from "../server/dashboard/token.ts";
import type { Command } from "./_command.ts";
import { parseFlags } from "./_flags.ts";

const usage = `Usage: agent dashboard [--token] [--rotate]

Prints the address of the dashboard that agent gateway run serves, and a link that logs you
in: it works once, for 10 minutes. The link is made from the dashboard token, kept in
~/.agent/state/dashboard.token (mode 0600; created on first use).
  --token    print the token itself, e.g. for Prometheus (Authorization: Bearer on /metrics)
  --rotate   replace the token: every session ends and every link made before stops working;
             then prints a new link (or, with --token, the new token)
On a remote server, forward the port first: ssh -L 8645:127.0.0.1:8645 <server>, then open
the link on your own machine.`;

/** `agent dashboard`. */
export const dashboard: Command = {
  path: ["dashboard"],
  summary: "Print a link that logs you in to the dashboard",
  usage,
  async run(argv, ctx) {
    const { values, positionals } = parseFlags(argv, {
      token: { type: "boolean" },
      rotate: { type: "boolean" },
    }, usage);
    if (positionals.length > 0) throw new UsageError(`Unexpected argument.\n\n${usage}`);
    const config = await loadConfig(ctx.env);
    for (const warning of config.warnings) ctx.stderr(`Warning: ${warning}`);
    const tokenPath = dashboardTokenPath(config.paths.stateDb);
    const token = values.rotate ? await rotateToken(tokenPath) : await ensureToken(tokenPath);
    if (values.rotate) {
      ctx.stderr(
        `Wrote a new token to ${tokenPath}: every session has ended, and links made before ` +
          "no longer work.",
      );
    }
    if (values.token) {
      ctx.stdout(token);
      return 0;
    }
    const where = await dashboardAddress(config);
    if (where.problem) ctx.stderr(where.problem);
    if (!where.url) return 1;
    const link = `${where.url}/login?code=${await makeLoginCode(token, ctx.now())}`;
    ctx.stdout(loginText(where.url, link));
    return 0;
  },
};

/**
 * Where the dashboard is: where the running gateway's listens, or, when none runs, where the
 * configuration says it will.
 * @returns its URL, and what the user must know first (none runs, it is turned off)
 */
async function dashboardAddress(
  config: Config,
): Promise<{ url?: string; problem?: string }> {
  const { enabled, host, port } = config.dashboard;
  if (!enabled) {
    return {
      problem: `The dashboard is turned off (dashboard.enabled: false in ${config.paths.config}).`,
    };
  }
  const running = await runningDashboardUrl(config.paths.stateDb);
  if (running) return { url: running };
  if (await gatewayRunning(config.paths.stateDb)) {
    return {
      problem: `The running gateway serves no dashboard: its log says why (${config.paths.log}).`,
    };
  }
  return {
    url: localUrl(host, port),
    problem: "No gateway is running with this home: start it with agent gateway run, then open " +
      "the link within 10 minutes.",
  };
}

/** What `agent dashboard` prints: the address, the link, and how to reach it from elsewhere. */
function loginText(url: string, link: string): string {
  const { hostname, port } = new URL(url);
  return [
    `Dashboard: ${url}`,
    "Log in with this link (it works once, for 10 minutes):",
    `  ${link}`,
    `From another machine: ssh -L ${port}:${hostname}:${port} <this server>, then open the ` +
    "link there.",
  ].join("\n");
}
