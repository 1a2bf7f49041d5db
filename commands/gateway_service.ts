/**
 * `agent gateway install` and `agent gateway uninstall`: the gateway as the systemd user unit
 * `agent-gateway` (CONTRACT, preamble; the specification's "restarted through the service
 * manager (user-level unit named `<agent>-gateway`)").
 *
 * Source: systemd.service(5), systemd.exec(5), systemd.kill(5) and systemd.syntax(7) for the
 * unit file; systemctl(1) for `--user daemon-reload | enable | restart | disable --now`.
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig, platformDisabledMessage } from "../lib/config.ts";
import { writeFileAtomic } from "../lib/_fs.ts";
import { UsageError } from "../lib/errors.ts";
import type { Command } from "./_command.ts";
import { parseFlags } from "./_shared.ts";

/** The unit's name (CONTRACT: "the systemd user unit is `agent-gateway`"). */
export const UNIT_NAME = "agent-gateway.service";

/** Variables the gateway reads that a service does not inherit from the installing shell. */
const GATEWAY_VARIABLES = /^(WEBHOOK_|OPENAI_|TELEGRAM_|DISCORD_|SLACK_|GITHUB_|GH_|GITLAB_)/;

const installUsage = `Usage: agent gateway install [--no-start] [--print]

Installs the gateway as the systemd user unit agent-gateway: writes
~/.config/systemd/user/agent-gateway.service (under XDG_CONFIG_HOME when set), then runs
systemctl --user daemon-reload, enable and restart, so it starts now and at every login, and
systemd restarts it when it fails. Run it again after moving the program or the home folder.

The service runs \`agent gateway run\` with this home folder (AGENT_HOME) and this PATH. It
reads the home's .env and config.yaml, not your shell's variables: keep tokens and keys in .env.
Its output goes to the journal (journalctl --user -u agent-gateway) and to logs/gateway.log.
On a server, \`loginctl enable-linger $USER\` keeps it running when you are logged out.

  --no-start   write and enable the unit, but do not start or restart the gateway now
  --print      print the unit and do nothing else (to adapt it to another supervisor)`;

const uninstallUsage = `Usage: agent gateway uninstall

Stops the agent-gateway systemd user unit, disables it and removes its file. Events still
queued stay in the state database for the next \`agent gateway run\`.`;

/**
 * What systemd runs: this program, as it was started, with `gateway run`. A compiled `agent`
 * runs itself; under `deno run`, Deno runs this checkout's `main.ts` with its `deno.json`.
 * @returns the argv of ExecStart, absolute paths only
 */
export function gatewayCommand(): string[] {
  if (Deno.build.standalone) return [Deno.execPath(), "gateway", "run"];
  const root = dirname(dirname(fileURLToPath(import.meta.url)));
  return [
    Deno.execPath(),
    "run",
    "--allow-all",
    "--config",
    join(root, "deno.json"),
    join(root, "main.ts"),
    "gateway",
    "run",
  ];
}

/**
 * The text of `agent-gateway.service`.
 * @param options `command`: ExecStart's argv (absolute program path); `home`: the absolute
 *   home folder (AGENT_HOME); `path`: the PATH the gateway and its command agents get, if any
 * @returns the unit file, ending in a newline
 * @throws RangeError when the program's path holds a character systemd refuses in one (a quote,
 *   a backslash, `$` or a control character: "Executable name contains special characters")
 */
export function systemdUnit(options: { command: string[]; home: string; path?: string }): string {
  const program = options.command[0];
  if (/["'\\$\p{Cc}]/u.test(program)) {
    throw new RangeError(
      `systemd cannot run a program whose path holds quotes, backslashes, "$" or control ` +
        `characters: ${JSON.stringify(program)}; move it to a plainer path`,
    );
  }
  const environment = [`AGENT_HOME=${options.home}`];
  if (options.path) environment.push(`PATH=${options.path}`);
  return [
    "# Written by `agent gateway install`; `agent gateway uninstall` removes it.",
    "[Unit]",
    "Description=agent webhook gateway",
    "Wants=network-online.target",
    "After=network-online.target",
    "",
    "[Service]",
    "Type=exec",
    `ExecStart=${options.command.map((word) => quoteUnitWord(word, "command")).join(" ")}`,
    ...environment.map((assignment) => `Environment=${quoteUnitWord(assignment, "environment")}`),
    // systemd restarts it after a failure (exit 1: the HTTP server or the database gone), not
    // after `systemctl stop`.
    "Restart=on-failure",
    "RestartSec=2",
    // SIGTERM to the gateway alone: it stops taking requests and lets running agent work
    // finish (10 s in all); command agents still running after it exits are killed then.
    "KillMode=mixed",
    "TimeoutStopSec=30",
    "",
    "[Install]",
    "WantedBy=default.target",
    "",
  ].join("\n");
}

/**
 * One word of a unit file's ExecStart, or one `Environment=` assignment, quoted as systemd
 * reads it (systemd.syntax(7), systemd.service(5) "Command lines"): `%` is a specifier, so
 * `%%`; in a command `$` expands a variable, so `$$`; a word with blanks, quotes or
 * backslashes goes in double quotes with C-style escapes.
 */
function quoteUnitWord(word: string, where: "command" | "environment"): string {
  let text = word.replaceAll("%", "%%");
  if (where === "command") text = text.replaceAll("$", "$$$$");
  if (/^[^\s"'\\;]+$/.test(text)) return text;
  return `"${text.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n")}"`;
}

/** Where the unit goes: `$XDG_CONFIG_HOME/systemd/user`, else `~/.config/systemd/user`. */
function unitPath(env: Record<string, string | undefined>): string {
  const base = env.XDG_CONFIG_HOME || (env.HOME ? join(env.HOME, ".config") : undefined);
  if (!base) throw new UsageError("Cannot find ~/.config: set HOME or XDG_CONFIG_HOME");
  return join(resolve(base), "systemd", "user", UNIT_NAME);
}

/**
 * Whether `agent gateway install` wrote the `agent-gateway` unit for this user.
 * @param env the process environment (`XDG_CONFIG_HOME`, `HOME`)
 */
export async function installedUnit(env: Record<string, string | undefined>): Promise<boolean> {
  try {
    return (await Deno.stat(unitPath(env))).isFile;
  } catch {
    return false;
  }
}

/** What a `systemctl --user` call did. */
interface SystemctlResult {
  ok: boolean;
  /** What it printed on standard error, trimmed; or why it could not run. */
  message: string;
  /** False when there is no `systemctl` to run. */
  found: boolean;
}

async function systemctl(args: string[], env: Record<string, string | undefined>) {
  const clean: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined) clean[key] = value;
  try {
    const output = await new Deno.Command("systemctl", {
      args: ["--user", ...args],
      env: clean,
      clearEnv: true,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).output();
    const message = new TextDecoder().decode(output.stderr).trim();
    return { ok: output.success, message, found: true } satisfies SystemctlResult;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return { ok: false, message: "systemctl not found", found: false } satisfies SystemctlResult;
    }
    throw error;
  }
}

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
    const config = await loadConfig(ctx.env);
    // A home without config.yaml is fine: the service's first run creates one, enabled.
    if (config.configFileExists && !config.webhook.enabled) {
      ctx.stderr(platformDisabledMessage(config.paths, config.webhook.enabledBy));
      return 1;
    }
    let unit: string;
    try {
      unit = systemdUnit({
        command: gatewayCommand(),
        home: resolve(config.paths.home),
        path: ctx.env.PATH,
      });
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
    await Deno.mkdir(dirname(path), { recursive: true });
    await writeFileAtomic(path, unit);
    const steps = [["daemon-reload"], ["enable", UNIT_NAME]];
    if (values.start !== false) steps.push(["restart", UNIT_NAME]);
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
          ? "  enabled; start it with: systemctl --user start agent-gateway"
          : "  started, and enabled at login",
        "  status:  systemctl --user status agent-gateway",
        `  logs:    journalctl --user -u agent-gateway, and ${config.paths.log}`,
        "  restart: systemctl --user restart agent-gateway (after changing config.yaml or .env)",
        "  To keep it running while you are logged out: loginctl enable-linger $USER",
        ...notInEnvFile(ctx.env, config.paths.envFile),
      ].join("\n"),
    );
    return 0;
  },
};

/**
 * A note naming the gateway's variables that are set in this shell but not in `.env`: the
 * service will not see them.
 */
function notInEnvFile(shell: Record<string, string | undefined>, envFile: string): string[] {
  const missing = Object.keys(shell).filter((key) => GATEWAY_VARIABLES.test(key) && shell[key]);
  const fromFile = new Set<string>();
  try {
    for (const line of Deno.readTextFileSync(envFile).split(/\r?\n/)) {
      const key = line.match(/^\s*(?:export\s+)?([^=#\s][^=]*?)\s*=/)?.[1];
      if (key) fromFile.add(key);
    }
  } catch { /* no .env: every variable is missing from it */ }
  const notInFile = missing.filter((key) => !fromFile.has(key)).sort();
  if (notInFile.length === 0) return [];
  return [
    `Note: ${notInFile.join(", ")} ${notInFile.length === 1 ? "is" : "are"} set in this shell ` +
    `but not in ${envFile}; the service will not see ${notInFile.length === 1 ? "it" : "them"}.`,
  ];
}

/** `agent gateway uninstall`. */
export const gatewayUninstall: Command = {
  path: ["gateway", "uninstall"],
  summary: "Stop and remove the agent-gateway systemd user service",
  usage: uninstallUsage,
  async run(argv, ctx) {
    const { positionals } = parseFlags(argv, {}, uninstallUsage);
    if (positionals.length > 0) throw new UsageError(`Unexpected argument.\n\n${uninstallUsage}`);
    const path = unitPath(ctx.env);
    try {
      await Deno.lstat(path);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
      ctx.stdout(`${UNIT_NAME} is not installed (no ${path}).`);
      return 0;
    }
    const stopped = await systemctl(["disable", "--now", UNIT_NAME], ctx.env);
    if (stopped.found && !stopped.ok) {
      ctx.stderr(
        `\`systemctl --user disable --now ${UNIT_NAME}\` failed: ${stopped.message}\n` +
          `${path} is left in place; run \`agent gateway uninstall\` again once systemd answers.`,
      );
      return 1;
    }
    await Deno.remove(path);
    if (stopped.found) await systemctl(["daemon-reload"], ctx.env);
    ctx.stdout(`Removed ${UNIT_NAME} (${path}); the gateway is stopped.`);
    return 0;
  },
};
