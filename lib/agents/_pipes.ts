/**
 * The standard streams of a `command` agent: the prompt written to its stdin, and its stdout
 * and stderr read up to a bound, so that a program that prints without end cannot fill the
 * gateway's memory.
 *
 * @module
 */

/**
 * Reads a stream to its end, or until `signal` aborts, keeping at most `maxBytes`: the first
 * ones, or with `keep: "last"` the last ones. An abort cancels the stream and returns what was
 * kept so far.
 * @param stream the program's stdout or stderr
 * @param maxBytes the most bytes kept
 * @param options `keep`: which end to keep (@default {"first"}); `onOverflow`: called once when
 *   the stream brings more than `maxBytes`; `signal`: stops the reading
 * @returns the bytes kept
 * @throws what reading the stream throws
 */
export async function readUpTo(
  stream: ReadableStream<Uint8Array>,
  maxBytes: number,
  options: { keep?: "first" | "last"; onOverflow?: () => void; signal?: AbortSignal } = {},
): Promise<Uint8Array> {
  const reader = stream.getReader();
  // Cancelling ends the pending read at once, so no read is left running after an abort.
  const cancel = () => reader.cancel().catch(() => {});
  options.signal?.addEventListener("abort", cancel, { once: true });
  let kept = new Uint8Array(0);
  let overflowed = false;
  try {
    while (true) {
      const { done, value: chunk } = await reader.read();
      if (done) return kept;
      // Past the limit only the last bytes can still change what is kept; the rest drains.
      if (overflowed && options.keep !== "last") continue;
      const joined = new Uint8Array(kept.length + chunk.length);
      joined.set(kept);
      joined.set(chunk, kept.length);
      if (joined.length <= maxBytes) {
        kept = joined;
        continue;
      }
      kept = options.keep === "last" ? joined.slice(-maxBytes) : joined.slice(0, maxBytes);
      if (!overflowed) {
        overflowed = true;
        options.onOverflow?.();
      }
    }
  } finally {
    options.signal?.removeEventListener("abort", cancel);
    reader.releaseLock();
  }
}

/**
 * Writes the prompt and closes stdin; a program that exits without reading is not an error.
 * @param child the program, started with stdin piped
 * @param input the whole prompt
 */
export async function writeInput(child: Deno.ChildProcess, input: string): Promise<void> {
  const writer = child.stdin.getWriter();
  try {
    await writer.write(new TextEncoder().encode(input));
    await writer.close();
  } catch {
    // EPIPE: the program did not read its input; its exit status tells the rest.
  }
}
