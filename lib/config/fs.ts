/**
 * File system work shared by the modules that keep files in the home folder: writing them
 * atomically, under a lock and private to the user (mode 0600), and the identity of a file
 * (whether a path still names the file a program opened).
 *
 * @module
 */
import { dirname } from "node:path";
import { ConfigError } from "../errors.ts";

/**
 * Writes all of `bytes` to `writer`, which may take them a few at a time (`Deno.stderr`, a
 * file).
 * @param writer anything with Deno's `write(bytes): Promise<number>`
 * @param bytes what to write
 */
export async function writeAll(
  writer: { write(bytes: Uint8Array): Promise<number> },
  bytes: Uint8Array,
): Promise<void> {
  for (let written = 0; written < bytes.length;) {
    written += await writer.write(bytes.subarray(written));
  }
}

/**
 * `text` without a leading UTF-8 byte-order mark, which editors on Windows put at the start of a
 * file. Parsers read it as part of the first line (`parseEnv` then skips that line without a
 * word, `JSON.parse` refuses the file); a file without one is returned as is.
 * @param text a file's text
 */
export function withoutByteOrderMark(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

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
 * Runs a read-modify-write of `path` under an exclusive lock on `<path>.lock` (flock, mode
 * 0600), so that commands run at the same time each see the others' changes instead of
 * overwriting them. The folder is created (0700) when missing.
 * @param path the file being edited
 * @param edit reads, changes and writes the file; its result is returned
 * @throws ConfigError naming the file when its folder or lock cannot be created; what `edit`
 *   throws
 */
export async function withFileLock<T>(path: string, edit: () => Promise<T>): Promise<T> {
  using lock = await cannotWrite(path, async () => {
    await Deno.mkdir(dirname(path), { recursive: true, mode: 0o700 });
    return await Deno.open(`${path}.lock`, { create: true, write: true, mode: 0o600 });
  });
  await lock.lock(true);
  try {
    return await edit();
  } finally {
    await lock.unlock();
  }
}

/**
 * Writes a file atomically with mode 0600: temp file in the same folder, fsync, rename.
 * An existing broader mode is narrowed because the new file replaces the old one. A symbolic
 * link (a `config.yaml` kept with one's dotfiles) stays a link: the file it points to is the
 * one replaced.
 * @param given destination
 * @param text content
 * @throws ConfigError naming the file when it cannot be written (read-only, full disk)
 */
export async function writeFileAtomic(given: string, text: string): Promise<void> {
  const path = await linkTarget(given);
  const temp = `${path}.${crypto.randomUUID()}.tmp`;
  await cannotWrite(path, async () => {
    try {
      using file = await Deno.open(temp, {
        create: true,
        write: true,
        truncate: true,
        mode: 0o600,
      });
      await writeAll(file, new TextEncoder().encode(text));
      await file.sync();
      await Deno.chmod(temp, 0o600);
      await Deno.rename(temp, path);
    } catch (error) {
      await Deno.remove(temp).catch(() => {});
      throw error;
    }
  });
}

/**
 * Runs file system work for `path`, turning what the system refuses (a read-only or full home,
 * a folder where a file should be) into a ConfigError naming the file, which the CLI prints
 * without a stack trace.
 * @param path the file the work writes, for the message
 * @param work only file system calls: any error it throws is taken for the system's refusal
 * @returns what `work` returns
 * @throws ConfigError `Cannot write <path>: <the system's reason>`
 */
export async function cannotWrite<T>(path: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    // Only file system calls run here: any error is the system's refusal. A full disk is a
    // plain Error ("No space left on device (os error 28)"), not one of Deno.errors.
    if (!(error instanceof Error)) throw error;
    throw new ConfigError(`Cannot write ${path}: ${error.message}`, { file: path, cause: error });
  }
}

/** The identity of a file: its device and inode. */
export type FileIdentity = { dev: number; ino: number | null };

/**
 * The identity of the file at `path`, following symbolic links.
 * @returns its device and inode, or undefined when nothing can be found there
 */
export function fileIdentity(path: string): FileIdentity | undefined {
  try {
    const info = Deno.statSync(path);
    return { dev: info.dev, ino: info.ino };
  } catch {
    return undefined;
  }
}

/** Whether `a` and `b` are the same file (an undefined `a`, a missing file, is none). */
export function sameFile(a: FileIdentity | undefined, b: FileIdentity | undefined): boolean {
  return a !== undefined && b !== undefined && a.dev === b.dev && a.ino === b.ino;
}

/** The file a symbolic link at `path` points to, or `path` itself (a file, or none yet). */
async function linkTarget(path: string): Promise<string> {
  try {
    if ((await Deno.lstat(path)).isSymlink) return await Deno.realPath(path);
  } catch {
    // Missing, or a link to nothing: the write creates `path` itself, and says why it cannot.
  }
  return path;
}
