/**
 * The gateway's copy of the subscription file: parsed once, kept in memory, and read again
 * when the file changes, so a request costs no file read.
 *
 * @module
 */
import { ConfigError } from "../errors.ts";
import { parseSubscriptions, type SubscriptionRecords } from "./file_store.ts";

/** How long {@link SubscriptionFileCache} trusts its copy before it stats the file again. */
export const SUBSCRIPTION_RECHECK_MS = 100;

/**
 * Keeps the parsed subscription file in memory and re-reads it when it changes, judged by
 * inode, size and mtime. Used by the gateway on every request, so the file is stat-ed at most
 * once per `recheckMs` (a `stat` on every request is a cost the ingest path notices), or at
 * once when a caller asks for a fresh copy: the gateway does for a name it does not know and
 * for a signature that does not verify, so a subscription or secret is honoured as soon as the
 * command that wrote it has returned.
 * @example
 * ```ts
 * const subscriptions = new SubscriptionFileCache(paths.subscriptions, {
 *   onErrorChange: (error) => error && log.error(error.message),
 * });
 * const records = subscriptions.current(); // the last good copy, re-read when it changed
 * const fresh = subscriptions.current({ fresh: true }); // stat the file now
 * ```
 */
export class SubscriptionFileCache {
  #path: string;
  #recheckMs: number;
  #now: () => number;
  #checkedAtMs = -Infinity;
  #stamp = "";
  #records: SubscriptionRecords = {};
  #error: ConfigError | undefined;
  #onErrorChange:
    | ((error: ConfigError | undefined, records: SubscriptionRecords) => void)
    | undefined;
  #onReload: ((records: SubscriptionRecords) => void) | undefined;

  /**
   * @param path the subscription file
   * @param options `recheckMs`: how long a copy is trusted, in milliseconds
   *   (@default {100}); `now`: the clock, in milliseconds (@default {performance.now});
   *   `onErrorChange`: called when a reload finds the file unreadable (with the error and the
   *   records still served), when it finds a different error, and when the file is readable
   *   again (with undefined), so the gateway can say so once rather than on every request;
   *   `onReload`: called with the new records each time the file is read anew (or found gone),
   *   before `current()` returns them
   */
  constructor(
    path: string,
    options: {
      recheckMs?: number;
      now?: () => number;
      onErrorChange?: (error: ConfigError | undefined, records: SubscriptionRecords) => void;
      onReload?: (records: SubscriptionRecords) => void;
    } = {},
  ) {
    this.#path = path;
    this.#recheckMs = options.recheckMs ?? SUBSCRIPTION_RECHECK_MS;
    this.#now = options.now ?? (() => performance.now());
    this.#onErrorChange = options.onErrorChange;
    this.#onReload = options.onReload;
  }

  /**
   * The current records. A file that became corrupt (an emptied one too) keeps the last good
   * records and sets {@link lastError}, so a bad edit never takes the running gateway down; only
   * a file that is gone means no subscriptions.
   * @param options `fresh`: stat the file now even when the copy is younger than `recheckMs`
   */
  current(options: { fresh?: boolean } = {}): SubscriptionRecords {
    const nowMs = this.#now();
    if (!options.fresh && nowMs - this.#checkedAtMs < this.#recheckMs) return this.#records;
    this.#checkedAtMs = nowMs;
    let stamp: string;
    try {
      const info = Deno.statSync(this.#path);
      stamp = `${info.ino}:${info.size}:${info.mtime?.getTime()}`;
    } catch {
      stamp = "absent";
    }
    if (stamp === this.#stamp) return this.#records;
    this.#stamp = stamp;
    if (stamp === "absent") {
      this.#records = {};
      this.#onReload?.(this.#records);
      this.#setError(undefined);
      return this.#records;
    }
    try {
      this.#records = parseSubscriptions(Deno.readTextFileSync(this.#path), this.#path);
      this.#onReload?.(this.#records);
      this.#setError(undefined);
    } catch (error) {
      this.#setError(
        error instanceof ConfigError
          ? error
          : new ConfigError(`Cannot read ${this.#path}: ${(error as Error).message}`),
      );
    }
    return this.#records;
  }

  #setError(error: ConfigError | undefined): void {
    const changed = error?.message !== this.#error?.message;
    this.#error = error;
    if (changed) this.#onErrorChange?.(error, this.#records);
  }

  /** The error of the last reload, if the file on disk is currently unreadable. */
  get lastError(): ConfigError | undefined {
    return this.#error;
  }
}
