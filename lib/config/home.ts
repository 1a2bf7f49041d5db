/**
 * The home folder (`~/.agent`, or `AGENT_HOME`) and the files in it (docs/configuration.md).
 *
 * @module
 */
import { join, resolve } from "node:path";
import { ConfigError } from "../errors.ts";

/** Absolute paths of everything the gateway keeps in its home folder. */
export interface HomePaths {
  /** The home folder itself. */
  home: string;
  /** `config.yaml`: configuration, edited by `gateway setup`. */
  config: string;
  /** `.env`: `KEY=value` secrets and overrides. */
  envFile: string;
  /** `webhook_subscriptions.json`: dynamic subscriptions, mode 0600. */
  subscriptions: string;
  /** `logs/gateway.log`: one line per decision, rotating. */
  log: string;
  /** `skills/`: one folder per skill with a `SKILL.md`. */
  skills: string;
  /** `state/gateway.db`: SQLite state (events, attempts, idempotency keys). */
  stateDb: string;
}

/**
 * Finds the home folder: `AGENT_HOME` when set, else `$HOME/.agent`. A `~` at the start of
 * `AGENT_HOME` (as a quoted `AGENT_HOME='~/x'` or a unit file leaves it) is `$HOME`, and a
 * relative one is taken from the current folder, so every path is absolute.
 * @param env the process environment
 * @returns the paths of the home folder and its files (nothing is created)
 * @throws ConfigError when neither `AGENT_HOME` nor `HOME` is set, or `AGENT_HOME` starts with
 *   `~` and `HOME` is not set
 * @example
 * ```ts
 * homePaths({ HOME: "/home/ada" }).stateDb; // "/home/ada/.agent/state/gateway.db"
 * homePaths({ AGENT_HOME: "~/hooks", HOME: "/home/ada" }).config; // "/home/ada/hooks/config.yaml"
 * ```
 */
export function homePaths(env: Record<string, string | undefined>): HomePaths {
  const home = homeFolder(env);
  return {
    home,
    config: join(home, "config.yaml"),
    envFile: join(home, ".env"),
    subscriptions: join(home, "webhook_subscriptions.json"),
    log: join(home, "logs", "gateway.log"),
    skills: join(home, "skills"),
    stateDb: join(home, "state", "gateway.db"),
  };
}

/** The home folder itself, absolute (see {@link homePaths}). */
function homeFolder(env: Record<string, string | undefined>): string {
  const given = env.AGENT_HOME;
  if (given && (given === "~" || given.startsWith("~/"))) {
    if (!env.HOME) throw new ConfigError(`AGENT_HOME is ${given}, but HOME is not set`);
    return join(env.HOME, given.slice(1));
  }
  if (given) return resolve(given);
  if (env.HOME) return join(env.HOME, ".agent");
  throw new ConfigError("Cannot find the home folder: set AGENT_HOME or HOME");
}
