/**
 * Reads a platform's answer without trusting its size: at most a bound that every real answer
 * fits in, so a misbehaving server or proxy answering hundreds of megabytes costs the gateway
 * that bound, not the whole body (a 700 MB answer took the gateway from 85 to 786 MB).
 *
 * @module
 */

/**
 * Room for everything in an answer but the echoed message, in bytes (1 MiB). The largest
 * answers are the created message itself: Telegram's `Message`, Discord's message object,
 * Slack's `message`, a GitHub comment or a GitLab note with author, links and reactions, a
 * few KiB besides the text.
 */
const ANSWER_BYTES_BESIDES_ECHO = 1_048_576;
/**
 * Bytes an answer may spend on each UTF-16 code unit of the request it echoes: JSON escapes
 * one as at most six bytes (`\u003c`), and UTF-8 needs at most three per code unit.
 */
const ECHO_BYTES_PER_REQUEST_UNIT = 6;

/**
 * The most bytes read of the answer to `requestJson`: 1 MiB, plus six bytes per code unit of
 * the request, since platforms echo the message and a GitLab note may be 1,000,000 characters.
 *
 * @param requestJson The request body as sent (JSON text).
 * @returns The bound in bytes; about 1 MiB for a chat message, about 7 MiB for the longest note.
 */
export function answerLimitBytes(requestJson: string): number {
  return ANSWER_BYTES_BESIDES_ECHO + ECHO_BYTES_PER_REQUEST_UNIT * requestJson.length;
}

/** An answer body as read: its text (UTF-8, the first `maxBytes` when longer) and whether whole. */
export interface AnswerText {
  /** The body decoded as UTF-8; only its first `maxBytes` bytes when `complete` is false. */
  text: string;
  /** False when the body was longer than `maxBytes`: the rest was cancelled, never read. */
  complete: boolean;
}

/**
 * Reads `response`'s body up to `maxBytes`, then cancels the rest so the server stops sending.
 *
 * @param response The platform's answer; its body is consumed or cancelled in every case.
 * @param maxBytes The most bytes kept.
 * @returns The text read and whether it is the whole body.
 * @throws Whatever reading the body throws (connection cut, the request's timeout).
 */
export async function readAnswerText(response: Response, maxBytes: number): Promise<AnswerText> {
  if (response.body === null) return { text: "", complete: true };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  try {
    while (true) {
      const { done, value } = await reader.read();
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
