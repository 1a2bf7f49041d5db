/**
 * Reading an HTTP answer's body without trusting its size: up to a bound, then the rest is
 * cancelled. Used for the answers of the delivery targets and of the LLM endpoint.
 *
 * @module
 */

/** A body as read: its text (UTF-8, the first `maxBytes` when longer) and whether whole. */
export interface BoundedText {
  /** The body decoded as UTF-8; only its first `maxBytes` bytes when `complete` is false. */
  text: string;
  /** False when the body was longer than `maxBytes`: the rest was cancelled, never read. */
  complete: boolean;
}

/**
 * Reads `response`'s body up to `maxBytes`, then cancels the rest so the server stops sending.
 *
 * @param response An HTTP answer; its body is consumed or cancelled in every case.
 * @param maxBytes The most bytes kept.
 * @param signal When it aborts, the rest of the body is cancelled and the read rejects with its
 *   reason (a run given up on at its timeout does not keep reading a body that trickles in).
 * @returns The text read and whether it is the whole body.
 * @throws Whatever reading the body throws (connection cut, the request's timeout, `signal`).
 */
export async function readBoundedText(
  response: Response,
  maxBytes: number,
  signal?: AbortSignal,
): Promise<BoundedText> {
  if (response.body === null) return { text: "", complete: true };
  const reader = response.body.getReader();
  const cancel = () => void reader.cancel(signal?.reason).catch(() => {});
  if (signal?.aborted) cancel();
  signal?.addEventListener("abort", cancel, { once: true });
  const chunks: Uint8Array[] = [];
  let length = 0;
  try {
    while (true) {
      const { done, value } = await reader.read();
      // A cancel on abort ends the read as if the body were whole: it is not.
      signal?.throwIfAborted();
      if (done) return { text: decode(chunks, length), complete: true };
      chunks.push(value);
      length += value.byteLength;
      if (length > maxBytes) {
        await reader.cancel().catch(() => {});
        return { text: decode(chunks, maxBytes), complete: false };
      }
    }
  } catch (error) {
    await reader.cancel().catch(() => {});
    throw error;
  } finally {
    signal?.removeEventListener("abort", cancel);
  }
}

/** The first `length` bytes of `chunks` as UTF-8 text. */
function decode(chunks: Uint8Array[], length: number): string {
  const bytes = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    if (offset >= length) break;
    const part = chunk.subarray(0, length - offset);
    bytes.set(part, offset);
    offset += part.byteLength;
  }
  return new TextDecoder().decode(bytes);
}
