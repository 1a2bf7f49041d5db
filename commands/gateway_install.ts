/**
 * `agent gateway install`: the gateway as the systemd user unit `agent-gateway`
 * (docs/running.md). `agent gateway uninstall` removes it.
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
import { enableUnit, systemctl, systemdFound } from "./_systemctl.ts";
import {
  CARRIED_PATHS,
  CARRIED_VARIABLES,
  gatewayCommand,
  systemdUnit,
  UNIT_NAME,
  unitPath,
} from "./_systemd_unit.ts";
import type { Command, CommandContext } from "./_command.ts";
import { parseFlags } from "./_flags.ts";
import { installReport } from "./_install_report.ts";

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
    const start = values.start !== false;
    const environment = serviceEnvironment(ctx.env);
    // The configuration as the service will see it: its own variables, and HOME, which systemd
    // sets; not this shell's WEBHOOK_* or tokens.
    const config = await loadConfig({ ...environment, HOME: ctx.env.HOME });
    // A home without config.yaml is fine: the service's first run creates one, enabled.
    if (config.configFileExists && !config.webhook.enabled) {
      ctx.stderr(platformDisabledMessage(config.paths, config.webhook.enabledBy));
      return 1;
    }
    const unit = unitText(environment, ctx);
    if (unit === undefined) return 1;
    if (values.print) {
      ctx.stdout(unit.trimEnd());
      return 0;
    }
    const path = unitPath(ctx.env);
    if (!(await systemdFound(ctx))) return 1;
    const previous = await Deno.readTextFile(path).catch(() => undefined);
    if (start && await startedByHand(config, { ctx, installed: previous !== undefined })) return 1;
    await Deno.mkdir(dirname(path), { recursive: true });
    await writeFileAtomic(path, unit);
    if (!(await enableUnit(ctx, { path, start }))) return 1;
    ctx.stdout(installReport({
      path,
      updated: previous !== undefined,
      started: start,
      shellEnv: ctx.env,
      service: config,
      environment,
    }));
    return 0;
  },
};

/**
 * The variables the service runs with: the home, this PATH, and the {@link CARRIED_VARIABLES}
 * set here. Only the home comes from this shell's configuration: its other variables never
 * reach the service, so a bad one here must not stop the install.
 * @param env this shell's environment
 * @returns the unit's `Environment=` variables, in order
 */
function serviceEnvironment(env: Record<string, string | undefined>): Record<string, string> {
  const environment: Record<string, string> = { AGENT_HOME: resolve(homePaths(env).home) };
  if (env.PATH) environment.PATH = env.PATH;
  for (const key of CARRIED_VARIABLES) {
    const value = env[key];
    // A relative path would be read from the service's working folder, not this one.
    if (value) environment[key] = CARRIED_PATHS.has(key) ? resolve(value) : value;
  }
  return environment;
}

/**
 * The unit file, or undefined after saying why this program cannot be run by systemd.
 * @param environment the service's variables
 * @param ctx where the reason is printed
 */
function unitText(environment: Record<string, string>, ctx: CommandContext): string | undefined {
  try {
    return systemdUnit({ command: gatewayCommand(), environment });
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    ctx.stderr(error.message);
    return undefined;
  }
}

/**
 * Whether a gateway started by hand holds this home, which the service would fail beside; if
 * so, says so. A running gateway is the service's own only when a unit is there and systemd
 * says it is active (then restart replaces it). The lock, not the address in it, tells: a
 * gateway still starting holds the lock before it writes where it listens.
 * @param config the configuration as the service sees it (its state folder)
 * @param options `ctx`: the command's environment and standard error; `installed`: whether
 *   the unit file exists already
 */
async function startedByHand(
  config: Config,
  options: { ctx: CommandContext; installed: boolean },
): Promise<boolean> {
  const { ctx, installed } = options;
  if (!(await gatewayRunning(config.paths.stateDb))) return false;
  if (installed && (await systemctl(["is-active", "--quiet", UNIT_NAME], ctx.env)).ok) {
    return false;
  }
  const running = await runningGatewayUrl(config.paths.stateDb) ?? "starting";
  ctx.stderr(
    `A gateway is already running with this home (${running}); the service could not ` +
      "start beside it. Stop that one first, or install with --no-start and start the " +
      "service once it is stopped.",
  );
  return true;
}
