/**
 * How much of a platform's answer is read: a bound that every real answer fits in, so a
 * misbehaving server or proxy answering hundreds of megabytes costs the gateway that bound, not
 * the whole body (a 700 MB answer took the gateway from 85 to 786 MB). Read with
 * `readBoundedText` (`bounded_body.ts`).
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
