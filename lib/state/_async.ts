/**
 * The state store as a backend over the network implements it: every method of
 * {@link StateStore}, with the same arguments and meaning, answering with a promise.
 *
 * @module
 */
import type { StateStore } from "./mod.ts";

/**
 * {@link StateStore} with every method asynchronous: what it returns comes in a promise, and
 * what it throws rejects the promise (the same classes: `StoreUnavailableError`,
 * `NotFoundError`, `ConflictError`). A `replay`'s `redispatch` callback stays synchronous.
 * The PostgreSQL backend (`lib/state/postgres/`) is one; its callers await every call.
 *
 * @example
 * ```ts
 * const store: AsyncStateStore = await openPostgresStore(url, { poolSize: 10 });
 * for (const claimed of await store.claimDue(Date.now(), 8)) {
 *   await store.markDelivered(claimed.id, Date.now());
 * }
 * ```
 */
export type AsyncStateStore = {
  [Method in keyof StateStore]: StateStore[Method] extends (...args: infer Args) => infer Result
    ? (...args: Args) => Promise<Awaited<Result>>
    : never;
};
