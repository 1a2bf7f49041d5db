/**
 * The subscription file as a {@link SubscriptionSource}: the home's `webhook_subscriptions.json`,
 * written under a lock (file_store.ts), watched by its inode, size and mtime (file_cache.ts).
 *
 * @module
 */
import { SubscriptionFileCache } from "./file_cache.ts";
import { readSubscriptions, updateSubscriptions } from "./file_store.ts";
import type { SubscriptionSource, SubscriptionWatch, WatchOptions } from "./source.ts";

/**
 * The source of one subscription file.
 * @param path the file (`webhook_subscriptions.json` of the home)
 * @param options `recheckMs`: how long a watch trusts its copy before it stats the file again,
 *   in milliseconds (@default {100})
 * @returns the source; nothing is opened, so `close()` does nothing
 */
export function fileSubscriptionSource(
  path: string,
  options: { recheckMs?: number } = {},
): SubscriptionSource {
  return {
    where: path,
    read: () => readSubscriptions(path),
    update: (change) => updateSubscriptions(path, change),
    watch: (watchOptions: WatchOptions = {}) => {
      const cache = new SubscriptionFileCache(path, { ...watchOptions, ...options });
      cache.current(); // reads the file now, so a corrupt one is reported at start
      const watch: SubscriptionWatch = {
        current: (currentOptions) => cache.current(currentOptions),
        get lastError() {
          return cache.lastError;
        },
        stop: () => Promise.resolve(),
      };
      return Promise.resolve(watch);
    },
    close: () => Promise.resolve(),
  };
}
