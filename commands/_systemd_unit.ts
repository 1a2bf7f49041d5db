/**
 * The systemd user unit `agent-gateway` (docs/running.md): its text, where it lives, and the
 * command it runs.
 *
 * Source: systemd.service(5), systemd.exec(5), systemd.kill(5), systemd.unit(5) and
 * systemd.syntax(7).
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { UsageError } from "../lib/errors.ts";

/** The unit's file name. */
export const UNIT_NAME = "agent-gateway.service";

/**
 * Variables the service takes from the shell that installs it, when set there, besides
 * `AGENT_HOME` and `PATH`: read by Deno itself before `.env` is (its cache, its proxies), so
 * they cannot go in `.env`.
 */
export const CARRIED_VARIABLES = [
  "DENO_DIR",
  "DENO_CERT",
  "DENO_TLS_CA_STORE",
  "NPM_CONFIG_REGISTRY",
  "HTTPS_PROXY",
  "HTTP_PROXY",
  "NO_PROXY",
  "https_proxy",
  "http_proxy",
  "no_proxy",
] as const;

/** Those of {@link CARRIED_VARIABLES} that name files or folders: made absolute when carried. */
export const CARRIED_PATHS: ReadonlySet<string> = new Set(["DENO_DIR", "DENO_CERT"]);

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
 * @param options `command`: ExecStart's argv (absolute program path); `environment`: the
 *   service's variables (`AGENT_HOME`, `PATH`, ...), in order
 * @returns the unit file, ending in a newline
 * @throws RangeError when the program's path holds a character systemd refuses in one (a quote,
 *   a backslash, `$` or a control character: "Executable name contains special characters")
 */
export function systemdUnit(
  options: { command: string[]; environment: Record<string, string> },
): string {
  const program = options.command[0];
  if (/["'\\$\p{Cc}]/u.test(program)) {
    throw new RangeError(
      `systemd cannot run a program whose path holds quotes, backslashes, "$" or control ` +
        `characters: ${JSON.stringify(program)}; move it to a plainer path`,
    );
  }
  const environment = Object.entries(options.environment).map(([key, value]) =>
    `Environment=${quoteUnitWord(`${key}=${value}`, "environment")}`
  );
  return [
    "# Written by `agent gateway install`; `agent gateway uninstall` removes it.",
    "[Unit]",
    "Description=agent webhook gateway",
    // A gateway that cannot start (a broken config.yaml, another gateway on the same home)
    // fails again at once: after 5 tries in a minute systemd gives up, instead of restarting it
    // every 2 s for ever. `systemctl --user reset-failed agent-gateway` lets it try again.
    "StartLimitIntervalSec=60",
    "StartLimitBurst=5",
    "",
    "[Service]",
    "Type=exec",
    `ExecStart=${options.command.map((word) => quoteUnitWord(word, "command")).join(" ")}`,
    ...environment,
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

/**
 * Where the unit goes: `$XDG_CONFIG_HOME/systemd/user`, else `~/.config/systemd/user`.
 * @param env the process environment
 * @throws UsageError when neither `XDG_CONFIG_HOME` nor `HOME` is set
 */
export function unitPath(env: Record<string, string | undefined>): string {
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
