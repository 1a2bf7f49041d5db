/**
 * The home folder (`~/.agent`, or `AGENT_HOME`) and the files in it (CONTRACT §1).
 *
 * @module
 */
import { join } from "node:path";
import { ConfigError } from "./errors.ts";

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
 * Finds the home folder: `AGENT_HOME` when set, else `$HOME/.agent`.
 * @param env the process environment
 * @returns the paths of the home folder and its files (nothing is created)
 * @throws ConfigError when neither `AGENT_HOME` nor `HOME` is set
 */
export function homePaths(env: Record<string, string | undefined>): HomePaths {
  const home = env.AGENT_HOME || (env.HOME ? join(env.HOME, ".agent") : undefined);
  if (!home) throw new ConfigError("Cannot find the home folder: set AGENT_HOME or HOME");
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
