/**
 * `deno task compile [--output FILE]`: builds `agent` as one executable that needs no Deno
 * (`dist/agent` by default), with `deno compile`. Deno downloads the runtime it builds on the
 * first time, for each version: without network (and without `DENORT_BIN` naming a local copy)
 * the build fails, and this says so in one line and leaves no file or folder behind
 * (docs/running.md#installing-the-agent-command).
 *
 * @module
 */
import { basename, dirname, join } from "node:path";
import { parseArgs } from "node:util";
import {
  AGENT_PERMISSIONS,
  CHECKOUT,
  innermostCause,
  runDeno,
  userPath,
  VERSION,
} from "./_deno.ts";

const USAGE = "Usage: deno task compile [--output FILE]   (dist/agent by default)";

/**
 * Builds the executable, or says why not and removes what the attempt left.
 * @param args the script's arguments
 * @returns the exit code: 0 built, 1 not, 2 a usage error
 */
async function main(args: string[]): Promise<number> {
  let output: string;
  try {
    const { values } = parseArgs({ args, options: { output: { type: "string" } } });
    output = values.output === undefined
      ? join(CHECKOUT, "dist", "agent")
      : userPath(values.output);
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const missing = await missingFolders(dirname(output));
  const built = await runDeno([
    "compile",
    "--quiet",
    // The checkout is type-checked where it is developed (`deno task ok`); a build repeats
    // none of that.
    "--no-check",
    ...AGENT_PERMISSIONS,
    ...["--config", join(CHECKOUT, "deno.json"), "--output", output],
    join(CHECKOUT, "main.ts"),
  ]);
  if (built.success) {
    console.log(`Built ${output} (agent ${VERSION}): it runs without Deno; put it on your PATH.`);
    return 0;
  }
  await removeLeftovers(output, missing);
  console.error(
    /denort|base binary/i.test(built.stderr)
      ? `Cannot build ${output}: deno compile could not download the Deno runtime it builds on ` +
        `(${innermostCause(built.stderr) ?? "no network"}). It needs network the first time; ` +
        "`deno task install` works offline."
      : `Cannot build ${output}:\n${built.stderr.replace(/\nStack backtrace:[\s\S]*$/, "")}`,
  );
  return 1;
}

/**
 * The folders on the way to `folder` that do not exist yet, deepest first: `deno compile`
 * creates them, and they are removed again when it fails.
 * @param folder the output's folder
 */
async function missingFolders(folder: string): Promise<string[]> {
  const missing: string[] = [];
  for (let dir = folder; dir !== dirname(dir); dir = dirname(dir)) {
    const exists = await Deno.stat(dir).then(() => true, () => false);
    if (exists) break;
    missing.push(dir);
  }
  return missing;
}

/**
 * Removes what a failed `deno compile` left: its temporary file beside the output
 * (`agent.tmp-<hex>`), and the folders it created, when empty.
 * @param output the executable's path
 * @param created the folders that did not exist before, deepest first
 */
async function removeLeftovers(output: string, created: string[]): Promise<void> {
  const prefix = `${basename(output)}.tmp-`;
  const entries = await Array.fromAsync(Deno.readDir(dirname(output))).catch(() => []);
  for (const entry of entries) {
    if (entry.isFile && entry.name.startsWith(prefix)) {
      await Deno.remove(join(dirname(output), entry.name)).catch(() => {});
    }
  }
  // Deno.remove without `recursive` refuses a folder that is not empty: what else is there stays.
  for (const dir of created) await Deno.remove(dir).catch(() => {});
}

if (import.meta.main) Deno.exit(await main(Deno.args));
