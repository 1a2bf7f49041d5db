/**
 * File writing shared by the modules that keep files in the home folder.
 *
 * @module
 */
import { dirname } from "node:path";

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
 * Runs a read-modify-write of `path` under an exclusive lock on `<path>.lock` (flock, mode
 * 0600), so that commands run at the same time each see the others' changes instead of
 * overwriting them. The folder is created (0700) when missing.
 * @param path the file being edited
 * @param edit reads, changes and writes the file; its result is returned
 */
export async function withFileLock<T>(path: string, edit: () => Promise<T>): Promise<T> {
  await Deno.mkdir(dirname(path), { recursive: true, mode: 0o700 });
  using lock = await Deno.open(`${path}.lock`, { create: true, write: true, mode: 0o600 });
  await lock.lock(true);
  try {
    return await edit();
  } finally {
    await lock.unlock();
  }
}

/**
 * Writes a file atomically with mode 0600: temp file in the same folder, fsync, rename.
 * An existing broader mode is narrowed because the new file replaces the old one.
 * @param path destination
 * @param text content
 */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  const temp = `${path}.${crypto.randomUUID()}.tmp`;
  try {
    using file = await Deno.open(temp, { create: true, write: true, truncate: true, mode: 0o600 });
    await file.write(new TextEncoder().encode(text));
    await file.sync();
    await Deno.chmod(temp, 0o600);
    await Deno.rename(temp, path);
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    throw error;
  }
}
