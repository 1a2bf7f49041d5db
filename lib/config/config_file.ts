/**
 * The home folder's `config.yaml` (docs/configuration.md): read, created with the defaults on
 * the gateway's first run, and edited without losing comments or unknown keys with the `yaml`
 * package's document API, written atomically with mode 0600.
 *
 * @module
 */
import { dirname } from "node:path";
import { type Document, isAlias, isMap, isScalar, parse as parseYaml, parseDocument } from "yaml";
import { ConfigError } from "../errors.ts";
import { cannotWrite, withFileLock, writeFileAtomic } from "./fs.ts";

/** The `config.yaml` written when the gateway starts in a home that has none. */
export const DEFAULT_CONFIG_YAML = `# agent gateway configuration. Every key: docs/configuration.md.
platforms:
  webhook:
    enabled: true
    extra:
      host: 127.0.0.1   # 0.0.0.0 to listen on all interfaces
      port: 8644
      # secret: ""      # global HMAC secret for static routes without their own
      # public_url: https://hooks.example.com
agent:
  provider: openai      # or: command (with command: ["my-agent", "--print"])
  model: gpt-4o-mini
`;

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

/** One change to `config.yaml`: the key path and its new value. */
export type ConfigEdit = { path: (string | number)[]; value: unknown };

/**
 * Applies edits to `config.yaml`, keeping comments, ordering and unknown keys; creates the
 * file (and its folder, 0700) when missing. Runs under `config.yaml.lock`, so edits made at the
 * same time all land.
 * @param file the path of `config.yaml`
 * @param edits key paths and values, e.g. `{path: ["platforms","webhook","enabled"], value: true}`
 * @throws ConfigError when the existing file is not valid YAML, or a key on an edit's way holds
 *   something other than a mapping (it is left untouched); when it cannot be read or written
 * @example
 * ```ts
 * await editConfigFile(paths.config, [
 *   { path: ["platforms", "webhook", "enabled"], value: true },
 *   { path: ["platforms", "webhook", "extra", "port"], value: 9000 },
 * ]);
 * ```
 */
export function editConfigFile(file: string, edits: ConfigEdit[]): Promise<void> {
  return withFileLock(file, () => editUnlocked(file, edits));
}

/** {@link editConfigFile} once the lock is held. */
async function editUnlocked(file: string, edits: ConfigEdit[]): Promise<void> {
  let text = "";
  try {
    text = await Deno.readTextFile(file);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) {
      throw new ConfigError(`Cannot read ${file}: ${(error as Error).message}`, { file });
    }
  }
  const document = parseDocument(text);
  if (document.errors.length > 0) {
    throw new ConfigError(
      `${file} is not valid YAML (${yamlProblem(document.errors[0])}); it was not changed`,
      { file },
    );
  }
  if (document.contents !== null && !isMap(document.contents)) {
    throw new ConfigError(`${file} must hold a mapping at the top level; it was not changed`, {
      file,
    });
  }
  for (const edit of edits) {
    emptyKeysAsMappings(document, edit.path, file);
    document.setIn(edit.path, edit.value);
  }
  // New lines with flow collections unpadded (`{events: [pipeline]}`); lines the edit did not
  // change as the file had them (`{ chat_id: C0123 }`, as deno fmt writes mappings).
  await writeFileAtomic(
    file,
    keepFlowStyle(document.toString({ flowCollectionPadding: false }), text),
  );
}

/**
 * Makes each key on the way to `path` that is written with no value (`extra:`, or `extra: ~`)
 * an empty mapping, keeping its comments, so that the edit can go inside it.
 * @param document the parsed `config.yaml`
 * @param path the key path of an edit
 * @param file the file's path, for the message
 * @throws ConfigError when a key on the way holds a value that is not a mapping (`extra: 5`),
 *   or an alias to one (`extra: *defaults`), which the edit would change for every key using
 *   it: the file is left untouched
 */
function emptyKeysAsMappings(document: Document, path: (string | number)[], file: string): void {
  for (let depth = 1; depth < path.length; depth++) {
    const prefix = path.slice(0, depth);
    const node = document.getIn(prefix, true);
    if (node === undefined || isMap(node)) continue;
    if (isScalar(node) && (node.value === null || node.value === "")) {
      const mapping = document.createNode({});
      mapping.comment = node.comment;
      mapping.commentBefore = node.commentBefore;
      document.setIn(prefix, mapping);
      continue;
    }
    if (isAlias(node)) {
      throw new ConfigError(
        `${prefix.join(".")} in ${file} is an alias (*${node.source}): write its keys out there ` +
          "for setup to edit them; it was not changed",
        { file },
      );
    }
    throw new ConfigError(
      `${prefix.join(".")} in ${file} must be a mapping of keys, not ${
        JSON.stringify(isScalar(node) ? node.value : String(node))
      }; it was not changed`,
      { file },
    );
  }
}

/**
 * What the YAML parser found wrong, and where, on one line: its message ends with a picture of
 * the line, often an empty one past the end of the file with a lone caret.
 * @param error the parser's error
 * @returns e.g. `Flow map in block collection must be sufficiently indented and end with a } at
 *   line 5, column 1`
 */
export function yamlProblem(error: Error): string {
  return error.message.split("\n")[0].replace(/:$/, "");
}

/**
 * `text` with each line that differs from a line of `original` only in the blanks just inside
 * flow brackets (`{ a: [ b ] }` against `{a: [b]}`) put back as `original` has it: the YAML
 * library writes every flow collection of a file in one style.
 * @param text the edited file, as the library wrote it
 * @param original the file before the edit
 */
function keepFlowStyle(text: string, original: string): string {
  const bare = (line: string) => line.replace(/([{[]) +/g, "$1").replace(/ +([}\]])/g, "$1");
  const written = new Map<string, string>();
  for (const line of original.split("\n")) {
    if (!written.has(bare(line))) written.set(bare(line), line);
  }
  return text.split("\n").map((line) => written.get(bare(line)) ?? line).join("\n");
}

/**
 * Writes {@link DEFAULT_CONFIG_YAML} when the file does not exist yet (and its folder, 0700).
 * @param file the path of `config.yaml`
 * @returns true when the file was created, false when one was there already
 * @throws ConfigError naming the file when it cannot be written (a read-only home)
 */
export async function createDefaultConfig(file: string): Promise<boolean> {
  return await cannotWrite(file, async () => {
    await Deno.mkdir(dirname(file), { recursive: true, mode: 0o700 });
    try {
      await Deno.writeTextFile(file, DEFAULT_CONFIG_YAML, { createNew: true, mode: 0o600 });
      return true;
    } catch (error) {
      if (error instanceof Deno.errors.AlreadyExists) return false;
      throw error;
    }
  });
}
