/**
 * Reading the home folder's files for the configuration: `config.yaml` (YAML) and `.env`
 * (`KEY=value` lines, with `node:util` `parseEnv`), each missing file read as empty, and the
 * narrowing of files that hold secrets to mode 0600.
 *
 * @module
 */
import { parseEnv } from "node:util";
import { parse as parseYaml } from "yaml";
import { yamlProblem } from "./config_file.ts";
import { ConfigError } from "../errors.ts";
import { withoutByteOrderMark } from "./fs.ts";

/**
 * Makes a file that holds secrets readable by its owner only (0600) when it is broader; a
 * missing file, or one we may not change, is left alone.
 * @param path the file
 */
export async function narrowMode(path: string): Promise<void> {
  try {
    const { mode } = await Deno.stat(path);
    if (mode !== null && (mode & 0o077) !== 0) await Deno.chmod(path, mode & 0o700);
  } catch {
    // Missing, or not ours to change: reading it reports any real problem.
  }
}

/**
 * Reads `.env` with `node:util` `parseEnv`; a missing file is empty.
 * @param path the `.env` file
 * @returns its variables
 * @throws ConfigError when the file cannot be read, or has a line that is not `KEY=value`
 */
export async function readEnvFile(path: string): Promise<Record<string, string>> {
  let text: string;
  try {
    text = withoutByteOrderMark(await Deno.readTextFile(path));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return {};
    throw new ConfigError(`Cannot read ${path}: ${(error as Error).message}`, {
      file: path,
      cause: error,
    });
  }
  checkEnvLines(text, path);
  return parseEnv(text) as Record<string, string>;
}

// Any name parseEnv takes (`my.key`, `MY-KEY`): the check is only for a missing "=".
const ENV_ASSIGNMENT = /^\s*(?:export\s+)?[^=#\s][^=]*=(.*)$/;

/**
 * Refuses a `.env` line that is neither blank, a `#` comment nor `KEY=value` (a quoted value may
 * run over several lines): `parseEnv` skips such a line without a word, so `TOKEN 123` (the `=`
 * forgotten) would leave the variable unset and surface much later as "TOKEN is not set".
 * The line's text is not quoted: it may hold a secret.
 * @throws ConfigError naming the file and the line number
 */
function checkEnvLines(text: string, path: string): void {
  let closing: string | undefined; // the quote that ends a value spanning lines
  text.split(/\r?\n/).forEach((line, index) => {
    if (closing !== undefined) {
      if (line.includes(closing)) closing = undefined;
      return;
    }
    if (line.trim() === "" || line.trimStart().startsWith("#")) return;
    const value = line.match(ENV_ASSIGNMENT)?.[1].trimStart();
    if (value === undefined) {
      throw new ConfigError(
        `${path} line ${index + 1} is not KEY=value (is the "=" missing?); fix or remove it`,
        { file: path },
      );
    }
    const quote = value[0];
    if ((quote === '"' || quote === "'" || quote === "`") && !value.slice(1).includes(quote)) {
      closing = quote;
    }
  });
}

/**
 * Reads and parses `config.yaml`; a missing file is empty.
 * @param path the `config.yaml` file
 * @returns whether it exists, and its parsed content (`{}` when missing or empty)
 * @throws ConfigError when the file cannot be read or is not valid YAML
 */
export async function readYamlFile(path: string): Promise<{ exists: boolean; data: unknown }> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { exists: false, data: {} };
    throw new ConfigError(`Cannot read ${path}: ${(error as Error).message}`, {
      file: path,
      cause: error,
    });
  }
  try {
    return { exists: true, data: parseYaml(text) ?? {} };
  } catch (error) {
    throw new ConfigError(`${path} is not valid YAML: ${yamlProblem(error as Error)}`, {
      file: path,
      cause: error,
    });
  }
}
