/**
 * Readiness of the files the gateway writes (docs/commands.md#agent-doctor): the state
 * database (its folder and file writable, its schema one this version reads) and the log
 * folder. A folder that does not exist yet is checked where it would be created.
 *
 * @module
 */
import { dirname } from "node:path";
import type { Config } from "../lib/config/mod.ts";
import { ConfigError, errorMessage, StoreUnavailableError } from "../lib/errors.ts";
import { openStateStore as openConfiguredStore, stateStoreName } from "../lib/state/open.ts";
import { openStateStore, SCHEMA_VERSION } from "../lib/state/sqlite/mod.ts";
import { type Check, failed, passed } from "./_readiness_check.ts";

/** The next step when a file of the home cannot be written. */
const MAKE_WRITABLE = "make it writable by the user the gateway runs as, or set AGENT_HOME to " +
  "a home folder that is";

/**
 * Checks the state database: its folder (or the folder it would be made in) and the file
 * writable, then opens it as every command does, which brings an older schema up to date.
 * @param config where events are kept: `state/gateway.db` in the home, or the `state.backend`
 *   database
 * @returns the check, blocking: events are kept there before a sender is answered
 */
export async function stateCheck(
  config: Pick<Config, "state" | "paths" | "webhook">,
): Promise<Check> {
  if (config.state.backend === "postgres") return await databaseCheck(config);
  const { stateDb } = config.paths;
  const problem = await unwritableFolder(dirname(stateDb)) ?? await unwritableFile(stateDb);
  if (problem) {
    return failed(
      "state",
      `${problem}: the gateway keeps every event there; ${MAKE_WRITABLE}`,
      true,
    );
  }
  if (!(await exists(stateDb))) {
    return passed("state", `${stateDb} does not exist yet; gateway run creates it`);
  }
  try {
    await openStateStore(stateDb, { backgroundCheckpoints: false }).close();
  } catch (error) {
    if (!(error instanceof StoreUnavailableError)) throw error;
    return failed("state", error.message, true);
  }
  return passed("state", `${stateDb} writable, schema version ${SCHEMA_VERSION}`);
}

/**
 * Checks that the PostgreSQL database of `state.backend: postgres` can be reached and its tables
 * read (or created), as `gateway run` will.
 * @returns the check, blocking: events are kept there before a sender is answered
 */
async function databaseCheck(config: Pick<Config, "state" | "paths" | "webhook">): Promise<Check> {
  try {
    await (await openConfiguredStore(config)).close();
  } catch (error) {
    if (!(error instanceof StoreUnavailableError || error instanceof ConfigError)) throw error;
    return failed("state", error.message, true);
  }
  return passed("state", `${stateStoreName(config)} reachable, its tables ready`);
}

/**
 * Checks the log folder (or the folder it would be made in) and the log file writable.
 * @param log the path of `logs/gateway.log`
 * @returns the check, blocking: `gateway run` does not start without its log
 */
export async function logCheck(log: string): Promise<Check> {
  const problem = await unwritableFolder(dirname(log)) ?? await unwritableFile(log);
  if (problem) {
    return failed(
      "log",
      `${problem}: gateway run cannot start without its log; ${MAKE_WRITABLE}`,
      true,
    );
  }
  return passed("log", `${log} writable`);
}

/**
 * Why files cannot be made in `folder`: tried for real (a file made and removed), since modes
 * do not tell about read-only mounts nor bind root. A missing folder is tried at the nearest
 * folder above it, where it would be created.
 * @returns the reason, or undefined when a file could be made
 */
async function unwritableFolder(folder: string): Promise<string | undefined> {
  let dir = folder;
  for (;;) {
    try {
      if (!(await Deno.stat(dir)).isDirectory) return `${dir} is not a folder`;
      break;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound) || dirname(dir) === dir) {
        return `cannot read ${dir} (${reason(error)})`;
      }
      dir = dirname(dir);
    }
  }
  try {
    await Deno.remove(await Deno.makeTempFile({ dir, prefix: ".agent-doctor-" }));
    return undefined;
  } catch (error) {
    return `cannot write in ${dir} (${reason(error)})`;
  }
}

/** Why `file` cannot be opened for writing (nothing is written); undefined when it can or is missing. */
async function unwritableFile(file: string): Promise<string | undefined> {
  try {
    (await Deno.open(file, { write: true })).close();
    return undefined;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    return `cannot write ${file} (${reason(error)})`;
  }
}

/** Whether `path` exists. */
async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** An error's message without the operation and path Deno adds: `Permission denied (os error 13)`. */
function reason(error: unknown): string {
  return errorMessage(error).split(": ")[0];
}
