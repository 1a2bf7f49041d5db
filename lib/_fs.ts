/**
 * File writing shared by the modules that keep files in the home folder.
 *
 * @module
 */

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
