/**
 * The groups of {@link StateStore} methods that each backend builds in a module of its own
 * (lib/state/sqlite/, lib/state/postgres/), named once so both build the same group.
 *
 * @module
 */
import type { StateStore } from "./mod.ts";

/** The methods of the store that take events in: ingest's and the direct path's. */
export type AcceptOps = Pick<
  StateStore,
  | "accept"
  | "recordDirect"
  | "recordDirectProgress"
  | "partsSentByFailedAttempts"
  | "resumeAfter"
  | "keyHolder"
  | "wasDelivered"
>;

/** The methods of the store that the worker runs events with. */
export type ClaimOps = Pick<
  StateStore,
  | "claimDue"
  | "saveResponse"
  | "saveTransformed"
  | "savePartsSent"
  | "markDelivered"
  | "markRetry"
  | "markFailed"
  | "recoverInterrupted"
  | "nextDueAtMs"
  | "moveQueued"
>;
