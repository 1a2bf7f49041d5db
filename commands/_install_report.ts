/**
 * What `agent gateway install` prints once the unit is in place: how to manage the service, and
 * which of this shell's variables the service will not see.
 *
 * @module
 */
import type { Config } from "../lib/config/mod.ts";
import { CARRIED_VARIABLES, UNIT_NAME } from "./_systemd_unit.ts";

/**
 * Variables the gateway reads that the service does not inherit from the installing shell, and
 * that belong in `.env` (AGENT_HOME is set by the unit).
 */
const GATEWAY_VARIABLES =
  /^(WEBHOOK_|OPENAI_|TELEGRAM_|DISCORD_|SLACK_|GITHUB_|GH_|GITLAB_|AGENT_)/;

/**
 * The report of a unit written and enabled.
 * @param options `path`: the unit file; `updated`: whether it replaced one; `started`: whether
 *   the service was (re)started; `shellEnv`: this shell's environment; `service`: the
 *   configuration as the service sees it; `environment`: the variables the unit sets
 * @returns the lines to print, joined
 */
export function installReport(options: {
  path: string;
  updated: boolean;
  started: boolean;
  shellEnv: Record<string, string | undefined>;
  service: Config;
  environment: Record<string, string>;
}): string {
  const { path, updated, started, service } = options;
  return [
    `${updated ? "Updated" : "Installed"} ${UNIT_NAME}: ${path}`,
    started
      ? "  started, and enabled at login"
      : updated
      ? "  enabled; a running service keeps its old command until: " +
        "systemctl --user restart agent-gateway"
      : "  enabled; start it with: systemctl --user start agent-gateway",
    "  status:  systemctl --user status agent-gateway",
    `  logs:    journalctl --user -u agent-gateway, and ${service.paths.log}`,
    "  restart: systemctl --user restart agent-gateway (after changing config.yaml or .env)",
    "  To keep it running while you are logged out: loginctl enable-linger $USER",
    ...notInEnvFile(options.shellEnv, service),
    ...carriedNote(options.environment),
  ].join("\n");
}

/** The line naming the variables the unit carries from this shell, if any. */
function carriedNote(environment: Record<string, string>): string[] {
  const carried = CARRIED_VARIABLES.filter((key) => key in environment);
  return carried.length ? [`  carried from this shell: ${carried.join(", ")}`] : [];
}

/**
 * A note naming the gateway's variables that are set in this shell but not in `.env`: the
 * service will not see them.
 * @param shell this shell's environment
 * @param service the configuration as the service sees it: its `env` is `.env` merged with the
 *   service's own variables, none of which the gateway's are (AGENT_HOME aside)
 */
function notInEnvFile(shell: Record<string, string | undefined>, service: Config): string[] {
  const notInFile = Object.keys(shell).filter((key) =>
    GATEWAY_VARIABLES.test(key) && key !== "AGENT_HOME" && shell[key] &&
    service.env[key] === undefined
  ).sort();
  if (notInFile.length === 0) return [];
  const envFile = service.paths.envFile;
  return [
    `Note: ${notInFile.join(", ")} ${notInFile.length === 1 ? "is" : "are"} set in this shell ` +
    `but not in ${envFile}; the service will not see ${notInFile.length === 1 ? "it" : "them"}.`,
  ];
}
