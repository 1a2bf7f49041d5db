/**
 * Finding a program as `execvp` finds it, so that a `command` agent started through `setsid`
 * fails the way a direct spawn would: not found, not a file, not executable.
 *
 * @module
 */
import { join, resolve } from "node:path";

/**
 * Where `program` is: a name with a slash is a path, any other is looked for in each folder of
 * `searchPath` (an empty entry is the working folder).
 * @param program a program name (`claude`) or a path (`./agent.sh`, `/usr/bin/llm`)
 * @param searchPath folders separated by `:`, as in `PATH`
 * @returns its absolute path
 * @throws Deno.errors.NotFound when there is no such file, or the path is not a file;
 *   Deno.errors.PermissionDenied when the files found are not executable
 */
export function programPath(program: string, searchPath: string): string {
  const candidates = program.includes("/")
    ? [program]
    : searchPath.split(":").map((folder) => join(folder || ".", program));
  let notExecutable: string | undefined;
  let notFile: string | undefined;
  for (const candidate of candidates) {
    let info: Deno.FileInfo;
    try {
      info = Deno.statSync(candidate);
    } catch {
      continue;
    }
    if (!info.isFile) {
      notFile ??= candidate;
      continue;
    }
    if (info.mode !== null && (info.mode & 0o111) === 0) {
      notExecutable ??= candidate;
      continue;
    }
    return resolve(candidate);
  }
  if (notExecutable) throw new Deno.errors.PermissionDenied(`${notExecutable} is not executable`);
  if (program.includes("/")) {
    throw new Deno.errors.NotFound(notFile ? `${notFile} is not a file` : "no such file");
  }
  throw new Deno.errors.NotFound("not found on PATH");
}
