/**
 * The state store's intake (part of {@link StateStore}): accepting an agent-mode event and its
 * idempotency key, what a coalescing window folded, and recording a direct-mode delivery and
 * the parts of it that got out.
 *
 * @module
 */
import type { AcceptResult, DirectOutcome, NewEvent, StoredEvent } from "./_records.ts";

/** How events come into the store; every method of {@link StateStore} that takes one in. */
export interface EventIntake {
  /**
   * Persists an agent-mode event, `queued` and due at `receivedAtMs`, and claims its delivery
   * id's idempotency key. Concurrent calls may share one commit.
   * @param event the event
   * @returns `accepted` once the event is durably committed, or `duplicate` (with the first
   *   event's id) when `event.dedupe` and the key was claimed less than `idempotencyTtlSeconds`
   *   ago
   * @throws StoreUnavailableError when it could not be committed: never `accepted` without it
   */
  accept(event: NewEvent): Promise<AcceptResult>;
  /**
   * The event that holds a delivery id's idempotency key now: the one a retry of that delivery
   * id was (or would be) answered as a duplicate of.
   * @param nowMs with it, only a key unexpired then counts; without it, any key, expired or not
   * @returns its id, or null when no event holds a key
   * @throws StoreUnavailableError when the database cannot be read
   */
  keyHolder(subscription: string, deliveryId: string, nowMs?: number): Promise<string | null>;
  /**
   * The events folded into an event's agent run (docs/subscriptions.md#coalescing): those of
   * its coalescing window that its first claim took with it. The claim folds them (they stay
   * `queued`, due never, with {@link StoredEvent.coalescedInto} set); the run's outcome
   * (`markDelivered`, `markFailed`) becomes theirs, unless a replay ran one on its own since.
   * `accept` opens or slides the window: a coalescing event is due when its window ends, and
   * moves the others of its key, not yet claimed, to the same time, at most
   * `maxSeconds` after the first of them arrived.
   * @param eventId the event whose run it is
   * @returns the folded events in the order they arrived; none for an event run alone
   * @throws StoreUnavailableError when the database cannot be read
   */
  foldedInto(eventId: string): Promise<StoredEvent[]>;
  /**
   * Whether an attempt at the event ever ended delivered (a replay may be under way now).
   * @throws StoreUnavailableError when the database cannot be read
   */
  wasDelivered(eventId: string): Promise<boolean>;
  /**
   * How many parts of a direct-mode message earlier failed attempts already delivered, so the
   * sender's retry resumes after them instead of sending them again. Only attempts of the same
   * subscription and delivery id, with the same message (`prompt`) and the same target and chat
   * (`route`), received within `idempotencyTtlSeconds` of `event.receivedAtMs`, count: a
   * different text or destination is a different message, and an expired delivery id a new one.
   * @param event the direct-mode event about to be delivered
   * @returns the most parts any such attempt delivered; 0 when none did
   * @throws StoreUnavailableError when the database cannot be read
   */
  partsSentByFailedAttempts(event: NewEvent): Promise<number>;
  /**
   * The part a replayed direct message resumes after: its own count, or the most parts any
   * failed attempt at the same message got out (see {@link partsSentByFailedAttempts}), since
   * the sender's own retries may have sent more. A message delivered once is being sent again
   * on purpose, from its own count.
   * @param event the stored direct-mode event
   * @returns a count of parts
   * @throws StoreUnavailableError when the database cannot be read
   */
  resumeAfter(event: StoredEvent): Promise<number>;
  /**
   * Stores a direct-mode event after its delivery, as `delivered` or `failed`, with one attempt.
   * A delivered event with `dedupe` claims its idempotency key (from any earlier holder); a
   * failed one leaves the id retryable.
   * @param event the event
   * @param outcome how the delivery went
   * @returns the event id
   * @throws StoreUnavailableError when it could not be committed
   */
  recordDirect(event: NewEvent, outcome: DirectOutcome): Promise<string>;
  /**
   * Records that a direct message of several parts has got `partsSent` out while the sender
   * waits, before the next part goes out: stored as a failed attempt ("interrupted: the gateway
   * stopped while sending"), so that if the gateway dies now the sender's retry resumes after
   * these parts (see {@link partsSentByFailedAttempts}) instead of sending them again.
   * {@link recordDirect} with `progressId` then records the outcome on the same event.
   * @param event the event being delivered
   * @param partsSent parts delivered so far
   * @param progressId what the first call returned, for the later parts
   * @returns the event id
   * @throws NotFoundError when `progressId` names no event
   * @throws StoreUnavailableError when it could not be committed
   */
  recordDirectProgress(event: NewEvent, partsSent: number, progressId?: string): Promise<string>;
}
