/**
 * The gateway's typed errors, and the text of a failure for messages.
 *
 * Each error carries what its one handler needs: `main.ts` turns one into an exit code
 * (`exitCode`: 2 for a {@link UsageError}, 1 for the others that have one); the worker turns an
 * {@link AgentError} or a {@link TargetError} into a retry or a final failure; the webhook
 * listener answers a {@link StoreUnavailableError} with 503 and `Retry-After` (docs/http.md).
 *
 * Text about a failure reaches the log and the state database: {@link errorMessage} is the
 * message of whatever was thrown, {@link errorChainText} an error with its causes,
 * {@link redact} takes a secret out of it and {@link cutText} cuts a long one.
 *
 * @module
 */

/** A command was called wrongly (bad flag, bad name). `main.ts` exits with {@link exitCode} 2. */
export class UsageError extends Error {
  /** Process exit code for this error. @default {2} */
  readonly exitCode = 2;
  /** @param message what was wrong and how to call it instead */
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/**
 * A configuration file or value is malformed (port `abc`, `enabled: maybe`, broken YAML or
 * JSON). The message names the key and the file. Exit code 1.
 */
export class ConfigError extends Error {
  /** Process exit code for this error. @default {1} */
  readonly exitCode = 1;
  /** The file that holds the bad value, when there is one. */
  readonly file?: string;
  /**
   * @param message what is wrong, naming the key and the file
   * @param options `file`: the file that holds it; `cause`: the error underneath (a YAML error)
   */
  constructor(message: string, options: { file?: string; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = "ConfigError";
    this.file = options.file;
  }
}

/**
 * A well-formed request that the state of things refuses now (replaying an event that is
 * running, or one whose delivery id a later event took). Exit code 1: the call was right, so it
 * is not a usage error.
 */
export class ConflictError extends Error {
  /** Process exit code for this error. @default {1} */
  readonly exitCode = 1;
  /** @param message what stands in the way, and what to do about it */
  constructor(message: string) {
    super(message);
    this.name = "ConflictError";
  }
}

/**
 * A named thing (subscription, event, skill) does not exist, or an event id prefix names
 * several. Exit code 1.
 */
export class NotFoundError extends Error {
  /** Process exit code for this error. @default {1} */
  readonly exitCode = 1;
  /** @param message what was not found, and what there is instead */
  constructor(message: string) {
    super(message);
    this.name = "NotFoundError";
  }
}

/**
 * The state database could not persist an event (disk full, locked past its deadline), or
 * cannot be opened. The receiver answers 503 with `Retry-After`, never 202; a command exits 1.
 */
export class StoreUnavailableError extends Error {
  /** Process exit code for this error. @default {1} */
  readonly exitCode = 1;
  /**
   * @param message what failed, naming the database
   * @param options `cause`: the SQLite error underneath
   */
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = "StoreUnavailableError";
  }
}

/**
 * A delivery to a target failed.
 *
 * `permanent` failures (4xx other than 429, a missing token, no destination) are not retried;
 * the others are, no sooner than `retryAfterSeconds` when the platform said so.
 */
export class TargetError extends Error {
  /** True when retrying cannot help. */
  readonly permanent: boolean;
  /** Seconds the platform asked us to wait (HTTP `Retry-After`, Telegram `retry_after`). */
  readonly retryAfterSeconds?: number;
  /** HTTP status of the platform's answer, when there was one. */
  readonly status?: number;
  /**
   * @param message what failed, naming the platform and the destination, never a token
   * @param options `permanent` (@default {false}), `retryAfterSeconds`, `status`, `cause`
   */
  constructor(
    message: string,
    options: { permanent?: boolean; retryAfterSeconds?: number; status?: number; cause?: unknown } =
      {},
  ) {
    super(message, { cause: options.cause });
    this.name = "TargetError";
    this.permanent = options.permanent ?? false;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.status = options.status;
  }
}

/**
 * An agent run failed (LLM endpoint error, timeout, command exit code, empty answer).
 * Same retry semantics as {@link TargetError}.
 */
export class AgentError extends Error {
  /** True when retrying cannot help (bad request, unknown model, bad credentials). */
  readonly permanent: boolean;
  /** Seconds the endpoint asked us to wait (HTTP `Retry-After`). */
  readonly retryAfterSeconds?: number;
  /**
   * True when the agent itself failed, whatever the prompt: the LLM endpoint could not be
   * reached, or answered 429 or 5xx; the `command` agent exited with a failure, printed nothing
   * or could not be started for a passing reason. Other runs would likely fail the same way now:
   * once two events in a row failed so, the worker holds new runs back a while (a success between
   * them says the failures were the prompts' own).
   */
  readonly unavailable: boolean;
  /**
   * @param message what failed, never the API key
   * @param options `permanent` (@default {false}), `retryAfterSeconds`, `unavailable`
   *   (@default {false}), `cause`
   */
  constructor(
    message: string,
    options: {
      permanent?: boolean;
      retryAfterSeconds?: number;
      unavailable?: boolean;
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "AgentError";
    this.permanent = options.permanent ?? false;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.unavailable = options.unavailable ?? false;
  }
}

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
 * @example
 * ```ts
 * const error = new Error("fetch failed", { cause: new Error("dns error") });
 * errorChainText(error); // "fetch failed: dns error"
 * ```
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
 * @example
 * ```ts
 * // Telegram's URL holds the bot token, and fetch errors quote the URL.
 * const shown = cutText(redact(errorChainText(error), token), 300); // redact, then cut
 * ```
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
