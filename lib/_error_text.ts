/**
 * Text about a failure, for error messages that reach the log and the state database: an error
 * with its causes, a secret taken out, a long description cut. Shared by the targets' HTTP
 * helper, the agent runners, the worker, the state database, skills and direct delivery.
 *
 * @module
 */

/** Causes followed at most, so a cyclic or endless `cause` chain still gives a line. */
const MAX_CAUSES = 4;

/**
 * The message of an error, or the string form of anything else thrown.
 * @param error what was thrown (anything)
 * @returns `error.message` for an `Error`, else `String(error)`
 */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * An error's message followed by those of its causes, joined by `": "`: for a failed fetch in
 * Deno, `fetch failed: error sending request for url (...): client error (Connect): dns error:
 * failed to lookup address information: Name or service not known`. Fetch errors quote the URL:
 * pass the result through {@link redact} before showing it.
 * @param error what was thrown (anything; a non-Error is turned into a string)
 * @returns the messages of `error` and of up to three causes
 */
export function errorChainText(error: unknown): string {
  const messages: string[] = [];
  for (let current = error; current !== undefined && messages.length < MAX_CAUSES;) {
    messages.push(errorMessage(current));
    current = current instanceof Error ? current.cause : undefined;
  }
  return messages.join(": ");
}

/**
 * Replaces every occurrence of `secret` in `text` (and its URL-encoded form) with `***`.
 * @param text the message
 * @param secret the token or key; `""` leaves `text` as it is
 * @returns `text` without the secret
 */
export function redact(text: string, secret: string): string {
  if (secret === "") return text;
  return text.split(secret).join("***").split(encodeURIComponent(secret)).join("***");
}

/**
 * Cuts `text` to `maxChars` characters and marks the cut with `…`, so a huge HTML error page
 * cannot flood the log. Redact first: a cut can leave part of a secret that {@link redact} would
 * no longer find.
 * @param text the description
 * @param maxChars the most characters kept, before the `…`
 * @returns `text` when it fits, else its first `maxChars` characters and `…`
 */
export function cutText(text: string, maxChars: number): string {
  return text.length > maxChars ? `${text.slice(0, maxChars)}…` : text;
}
