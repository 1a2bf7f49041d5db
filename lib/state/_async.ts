/**
 * The name the PostgreSQL backend first gave the asynchronous state store, kept as an alias:
 * every method of {@link StateStore} answers with a promise now, whatever the backend.
 *
 * @module
 */
import type { StateStore } from "./mod.ts";

/**
 * {@link StateStore} itself: every method answers with a promise, and what it throws rejects
 * the promise (`StoreUnavailableError`, `NotFoundError`, `ConflictError`).
 */
export type AsyncStateStore = StateStore;
