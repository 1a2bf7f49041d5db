/**
 * `agent gateway install`: the gateway as the systemd user unit `agent-gateway` (CONTRACT,
 * preamble; the specification's "restarted through the service manager (user-level unit named
 * `<agent>-gateway`)"). `agent gateway uninstall` removes it.
 *
 * Source: systemd.service(5), systemd.exec(5), systemd.kill(5) and systemd.syntax(7) for the
 * unit file; systemctl(1) for `--user daemon-reload | enable | restart`.
 *
 * @module
 */
import { dirname, resolve } from "node:path";
import { type Config, loadConfig, platformDisabledMessage } from "../lib/config/mod.ts";
import { writeFileAtomic } from "../lib/config/fs.ts";
import { UsageError } from "../lib/errors.ts";
import { gatewayRunning, runningGatewayUrl } from "../lib/state/gateway_lock.ts";
import { homePaths } from "../lib/config/home.ts";
import {
  CARRIED_PATHS,
  CARRIED_VARIABLES,
  gatewayCommand,
  systemctl,
  systemdUnit,
  UNIT_NAME,
  unitPath,
} from "./_systemd_unit.ts";
import type { Command } from "./_command.ts";
import { parseFlags } from "./_shared.ts";

/**
 * Variables the gateway reads that the service does not inherit from the installing shell, and
 * that belong in `.env` (AGENT_HOME is set by the unit).
 */
const GATEWAY_VARIABLES =
  /^(WEBHOOK_|OPENAI_|TELEGRAM_|DISCORD_|SLACK_|GITHUB_|GH_|GITLAB_|AGENT_)/;

const installUsage = `Usage: agent gateway install [--no-start] [--print]

Installs the gateway as the systemd user unit agent-gateway: writes
~/.config/systemd/user/agent-gateway.service (under XDG_CONFIG_HOME when set), then runs
systemctl --user daemon-reload, enable, reset-failed and restart, so it starts now and at every
login, and systemd restarts it when it fails. Run it again after moving the program or the home
folder.

The service runs \`agent gateway run\` with this home folder (AGENT_HOME), this PATH, and
DENO_DIR, DENO_CERT, DENO_TLS_CA_STORE, NPM_CONFIG_REGISTRY and the proxy variables when set. It
reads the home's .env and config.yaml, not your shell's other variables: keep tokens and keys in
.env.
Its output goes to the journal (journalctl --user -u agent-gateway) and to logs/gateway.log.
On a server, \`loginctl enable-linger $USER\` keeps it running when you are logged out.

  --no-start   write and enable the unit, but do not start or restart the gateway now
  --print      print the unit and do nothing else (to adapt it to another supervisor)`;

/** `agent gateway install`. */
export const gatewayInstall: Command = {
  path: ["gateway", "install"],
  summary: "Run the gateway as the systemd user service agent-gateway",
  usage: installUsage,
  async run(argv, ctx) {
    const { values, positionals } = parseFlags(argv, {
      // `--no-start` (parseFlags takes `--no-<flag>` as the flag turned off).
      start: { type: "boolean" },
      print: { type: "boolean" },
    }, installUsage);
    if (positionals.length > 0) throw new UsageError(`Unexpected argument.\n\n${installUsage}`);
    // Only the home comes from this shell's configuration: its other variables never reach
    // the service, so a bad one here must not stop the install.
    const environment: Record<string, string> = { AGENT_HOME: resolve(homePaths(ctx.env).home) };
    if (ctx.env.PATH) environment.PATH = ctx.env.PATH;
    for (const key of CARRIED_VARIABLES) {
      const value = ctx.env[key];
      // A relative path would be read from the service's working folder, not this one.
      if (value) environment[key] = CARRIED_PATHS.has(key) ? resolve(value) : value;
    }
    // The configuration as the service will see it: its own variables, and HOME, which systemd
    // sets; not this shell's WEBHOOK_* or tokens.
    const config = await loadConfig({ ...environment, HOME: ctx.env.HOME });
    // A home without config.yaml is fine: the service's first run creates one, enabled.
    if (config.configFileExists && !config.webhook.enabled) {
      ctx.stderr(platformDisabledMessage(config.paths, config.webhook.enabledBy));
      return 1;
    }
    let unit: string;
    try {
      unit = systemdUnit({ command: gatewayCommand(), environment });
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      ctx.stderr(error.message);
      return 1;
    }
    if (values.print) {
      ctx.stdout(unit.trimEnd());
      return 0;
    }
    const path = unitPath(ctx.env);
    // Nothing is written where systemd is not: the user gets the unit to adapt instead.
    const probe = await systemctl(["--version"], ctx.env);
    if (!probe.found) {
      ctx.stderr(
        "systemd's systemctl is not available here, so there is no user service to install.\n" +
          "Run `agent gateway run` under your own supervisor; `agent gateway install --print` " +
          "shows the systemd unit to adapt.",
      );
      return 1;
    }
    const previous = await Deno.readTextFile(path).catch(() => undefined);
    // A gateway started by hand holds this home: the service would fail beside it. A running
    // gateway is the service's own only when a unit is there and systemd says it is active
    // (then restart replaces it). The lock, not the address in it, tells: a gateway still
    // starting holds the lock before it writes where it listens.
    if (
      values.start !== false && await gatewayRunning(config.paths.stateDb) &&
      (previous === undefined ||
        !(await systemctl(["is-active", "--quiet", UNIT_NAME], ctx.env)).ok)
    ) {
      const running = await runningGatewayUrl(config.paths.stateDb) ?? "starting";
      ctx.stderr(
        `A gateway is already running with this home (${running}); the service could not ` +
          "start beside it. Stop that one first, or install with --no-start and start the " +
          "service once it is stopped.",
      );
      return 1;
    }
    await Deno.mkdir(dirname(path), { recursive: true });
    await writeFileAtomic(path, unit);
    const steps = [["daemon-reload"], ["enable", UNIT_NAME]];
    // reset-failed first: after 5 failed starts in a minute systemd refuses a restart too.
    if (values.start !== false) steps.push(["reset-failed", UNIT_NAME], ["restart", UNIT_NAME]);
    for (const step of steps) {
      const result = await systemctl(step, ctx.env);
      if (!result.ok) {
        ctx.stderr(
          `Wrote ${path}, but \`systemctl --user ${step.join(" ")}\` failed: ${result.message}\n` +
            "Once your user's systemd is reachable (a login session, or `loginctl enable-linger " +
            "$USER`), run:\n" +
            steps.map((s) => `  systemctl --user ${s.join(" ")}`).join("\n"),
        );
        return 1;
      }
    }
    ctx.stdout(
      [
        `${previous === undefined ? "Installed" : "Updated"} ${UNIT_NAME}: ${path}`,
        values.start === false
          ? previous === undefined
            ? "  enabled; start it with: systemctl --user start agent-gateway"
            : "  enabled; a running service keeps its old command until: " +
              "systemctl --user restart agent-gateway"
          : "  started, and enabled at login",
        "  status:  systemctl --user status agent-gateway",
        `  logs:    journalctl --user -u agent-gateway, and ${config.paths.log}`,
        "  restart: systemctl --user restart agent-gateway (after changing config.yaml or .env)",
        "  To keep it running while you are logged out: loginctl enable-linger $USER",
        ...notInEnvFile(ctx.env, config),
        ...carriedNote(environment),
      ].join("\n"),
    );
    return 0;
  },
};

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
