/**
 * The durable state of the gateway (CONTRACT §1, §6, §8): accepted events, their delivery
 * attempts, and idempotency keys, in one SQLite database (`state/gateway.db`, WAL mode).
 *
 * An agent-mode event is answered 202 only after {@link StateStore.accept} has committed it;
 * concurrent accepts share one transaction (group commit), which is what makes a durable
 * ingest path fast. The worker then moves each event `queued → running → delivered | failed`.
 *
 * Durability: WAL mode with `synchronous=NORMAL` by default, so a committed event survives a
 * crash of the process (kill -9) but the last commits may be lost on a power loss or an OS
 * crash; `synchronous: "FULL"` survives those too, at one fsync per group commit. Idempotency
 * keys live in the database (not in memory), on the event rows, scoped per subscription, for
 * `idempotencyTtlSeconds` or until their event is pruned, whichever comes first.
 *
 * @module
 */
import type { EventSource } from "../subscriptions/event_info.ts";

export type { EventSource };
export { openStateStore } from "./sqlite/mod.ts";
export { needsAgentRun, storableText } from "./sqlite/_schema.ts";
export { corruptionAdvice } from "./sqlite/_database.ts";
export type { SqliteStateStore, StateStoreOptions } from "./sqlite/mod.ts";
export type { GroupCommitStats } from "./sqlite/_group_commit.ts";

/** Where an event is in its life: `queued → running → delivered | failed`. */
export type EventStatus = "queued" | "running" | "delivered" | "failed";

/**
 * The subscription's routing at accept time, so the worker does not depend on the subscription
 * still existing (or being unchanged) when it runs.
 */
export interface RouteSnapshot {
  /** Target name: `log`, `telegram`, `slack`, ... */
  deliver: string;
  /** Rendered `deliver_extra.chat_id`, when the subscription has one. */
  chatId?: string;
  /** Skill names added to the system prompt, in order. */
  skills: string[];
}

/** An event as the receiver hands it to the store. */
export interface NewEvent {
  /** Subscription name. */
  subscription: string;
  /** Event label: the type (CONTRACT §6) with `.<action>` when there is one, e.g. `issues.opened`. */
  eventLabel: string;
  /** Delivery id from the sender's headers, or a generated one. */
  deliveryId: string;
  /** False when the delivery id was generated: such events are never deduplicated. */
  dedupe: boolean;
  /** Sender family. */
  source: EventSource;
  /** `agent`: run the agent then deliver its answer; `direct`: deliver `prompt` as is. */
  mode: "agent" | "direct";
  /** The raw JSON text of the payload. */
  payload: string;
  /** The rendered prompt (when accepted or last replayed), or the message itself in direct mode. */
  prompt: string;
  /** Routing, as the route was when the event was accepted or last replayed. */
  route: RouteSnapshot;
  /** When the request was received, in milliseconds since the epoch. */
  receivedAtMs: number;
}

/**
 * How a route handles one event: its mode, the rendered prompt (or direct message) and the
 * route snapshot. Rendered at ingest, and again by a replay (`dispatchFor` in `lib/subscriptions/routes.ts`).
 */
export type EventDispatch = Pick<NewEvent, "mode" | "prompt" | "route">;

/** How a direct delivery went, as {@link StateStore.recordDirect} records it. */
export interface DirectOutcome {
  delivered: boolean;
  /** Why it failed, when it did. */
  error?: string;
  /** Parts of the message delivered. */
  partsSent: number;
  /**
   * The event {@link StateStore.recordDirectProgress} stored for this delivery, which then
   * holds the outcome instead of a second event.
   */
  progressId?: string;
  /**
   * When the delivery ended, for a record written later, in ms since the epoch (@default now):
   * the delivery id's idempotency window counts from it.
   */
  atMs?: number;
}

/** An event as stored, with its progress. */
export interface StoredEvent extends NewEvent {
  /** Short sortable id, e.g. `evt_0m3x8k2qa4f9z1c0b`. */
  id: string;
  status: EventStatus;
  /** Attempts made in the current series (reset by a replay). */
  attempts: number;
  /**
   * Attempts of the current series that delivered part of a message before failing: they do not
   * count toward the retry limit, since each one moved the delivery on.
   */
  uncountedAttempts: number;
  /** When a queued event is due, in milliseconds since the epoch; null otherwise. */
  nextAttemptAtMs: number | null;
  /** The agent's answer once it ran: a delivery retry does not run the agent again. */
  response: string | null;
  /** Message parts already delivered: a resumed delivery skips them. */
  partsSent: number;
  /** Error of the last failed attempt. */
  lastError: string | null;
  /** Last change, in milliseconds since the epoch. */
  updatedAtMs: number;
  /** When a replay queued the current series of attempts, in ms since the epoch; null if none. */
  replayedAtMs: number | null;
}

/** One attempt at an event: the agent run and/or the delivery. */
export interface Attempt {
  eventId: string;
  /** Attempt number in its series, from 1. */
  attempt: number;
  startedAtMs: number;
  /** Null while the attempt is in progress (or was interrupted by a crash). */
  finishedAtMs: number | null;
  /** The step the attempt reached (and failed at, when `error` is set). */
  step: "agent" | "delivery";
  error: string | null;
}

/** What {@link StateStore.accept} did: stored the event, or found its delivery id already seen. */
export type AcceptResult =
  | { status: "accepted"; eventId: string }
  | { status: "duplicate"; eventId: string | null };

/** The state database, as the receiver, the worker and the CLI use it. */
export interface StateStore {
  /**
   * Persists an agent-mode event and claims its idempotency key, in the next group commit.
   * @param event the event
   * @returns `accepted` once COMMIT returned, or `duplicate` (with the first event's id) when
   *   `event.dedupe` and the key was claimed less than `idempotencyTtlSeconds` ago
   * @throws StoreUnavailableError when the batch could not be committed (disk full, locked
   *   past `busyTimeoutMs`, store closed): never `accepted` without COMMIT
   */
  accept(event: NewEvent): Promise<AcceptResult>;
  /**
   * The event that holds a delivery id's idempotency key now: the one a retry of that delivery
   * id was (or would be) answered as a duplicate of.
   * @param nowMs with it, only a key unexpired then counts; without it, any key, expired or not
   * @returns its id, or null when no event holds a key
   */
  keyHolder(subscription: string, deliveryId: string, nowMs?: number): string | null;
  /** Whether an attempt at the event ever ended delivered (a replay may be under way now). */
  wasDelivered(eventId: string): boolean;
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
  partsSentByFailedAttempts(event: NewEvent): number;
  /**
   * The part a replayed direct message resumes after: its own count, or the most parts any
   * failed attempt at the same message got out (see {@link partsSentByFailedAttempts}), since
   * the sender's own retries may have sent more. A message delivered once is being sent again
   * on purpose, from its own count.
   * @param event the stored direct-mode event
   */
  resumeAfter(event: StoredEvent): number;
  /**
   * Stores a direct-mode event after its delivery, as `delivered` or `failed`. A delivered
   * event with `dedupe` claims its idempotency key; a failed one leaves the id retryable.
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
   * @throws StoreUnavailableError when it could not be committed
   */
  recordDirectProgress(event: NewEvent, partsSent: number, progressId?: string): Promise<string>;
  /**
   * Claims events that are queued and due: they become `running`, `attempts` grows by one and
   * an attempt row is opened.
   * @param nowMs current time
   * @param limit most events to claim
   * @param options `deliveryOnly`: only events whose next step is a delivery (a direct message,
   *   or an agent's answer already saved), not those waiting for an agent run
   * @returns the claimed events, earliest due first
   */
  claimDue(nowMs: number, limit: number, options?: { deliveryOnly?: boolean }): StoredEvent[];
  /** Persists the agent's answer, so a delivery retry does not run the agent again. */
  saveResponse(eventId: string, response: string): void;
  /**
   * Persists how many message parts were delivered, so none is sent twice after a crash. An
   * attempt that got a part out with more parts to go moved the delivery on: it does not count
   * toward the retry limit, whether it then fails or a crash cuts it off. So the first such save
   * of an attempt adds it to {@link StoredEvent.uncountedAttempts}.
   * @param eventId the running event
   * @param partsSent parts delivered so far, this attempt's included
   * @param attempt `sentBefore`: parts delivered when the attempt began (its `partsSent` as
   *   claimed); `parts`: the parts of the whole message
   */
  savePartsSent(
    eventId: string,
    partsSent: number,
    attempt: { sentBefore: number; parts: number },
  ): void;
  /**
   * Marks a running event delivered and closes its attempt. An event with a delivery id that
   * holds no idempotency key (a direct message recorded failed, then replayed) takes the key,
   * unless another event holds it unexpired, so the sender's retry is then a duplicate.
   */
  markDelivered(eventId: string, nowMs: number): void;
  /**
   * Closes the attempt with its error and queues the event again, due at `nextAttemptAtMs`.
   * @param eventId the running event
   * @param retry `error`: why the attempt failed; `step`: the step it failed at;
   *   `nextAttemptAtMs`: when it is due again and `nowMs`: now, both in ms since the epoch
   */
  markRetry(
    eventId: string,
    retry: { error: string; step: "agent" | "delivery"; nextAttemptAtMs: number; nowMs: number },
  ): void;
  /**
   * Closes the attempt with its error and marks the event `failed` (dead letter).
   * @param eventId the running event
   * @param failure `error`: why the attempt failed; `step`: the step it failed at; `nowMs`:
   *   now, in ms since the epoch
   */
  markFailed(
    eventId: string,
    failure: { error: string; step: "agent" | "delivery"; nowMs: number },
  ): void;
  /**
   * Puts events left `running` by a crash or restart back in the queue, due now, their open
   * attempt closed as interrupted. After a crash (at start) it still counts, unless it had
   * delivered a part (see {@link savePartsSent}); after a graceful stop it does not.
   * @param nowMs current time
   * @param eventId only this event (the worker's own run, ended by a graceful stop, which
   *   does not count); every running event when omitted (at start)
   * @returns how many were requeued
   */
  recoverInterrupted(nowMs: number, eventId?: string): number;
  /** When the earliest queued event is due (ms since the epoch), or null when none is queued. */
  nextDueAtMs(): number | null;
  /**
   * Moves when every queued event is due by `byMs`: the worker does when the system clock was
   * set back, so events queued before are not held until the clock catches up.
   * @param byMs milliseconds to add (negative: earlier)
   * @returns how many events were moved
   * @throws StoreUnavailableError when the database refuses the write
   */
  moveQueued(byMs: number): number;
  /**
   * Lists events, newest first.
   * @param filter by subscription and/or status; `limit` @default {20}
   * @returns the events
   */
  listEvents(
    filter: { subscription?: string; status?: EventStatus; limit?: number },
  ): StoredEvent[];
  /**
   * Finds an event by id or by a prefix of its id.
   * @returns the event, or null when nothing matches
   * @throws NotFoundError when the prefix matches several events (the message lists some)
   */
  getEvent(eventId: string): StoredEvent | null;
  /** Attempts of an event, oldest first (every series, replays included). */
  attempts(eventId: string): Attempt[];
  /**
   * Starts a new attempt series: `queued`, due now, attempts 0, no response, no part sent;
   * except that a direct message not delivered whole, sent again with the same text and route,
   * keeps its count of parts sent, so the replay sends the rest. A direct message takes its
   * delivery id's key (unless another event holds it unexpired), so the sender's retry while
   * the replay waits is a duplicate; other keys are untouched.
   * @param eventId id or unique prefix
   * @param nowMs current time
   * @param redispatch called with the event found: returns its new mode, prompt and route (the
   *   subscription as it is now), or undefined to keep those the event has
   * @returns the event as requeued
   * @throws NotFoundError when no event matches
   * @throws ConflictError when the event is running, or was when the gateway last stopped, or
   *   when replaying a failed direct message would send it twice
   */
  replay(
    eventId: string,
    nowMs: number,
    redispatch?: (event: StoredEvent) => EventDispatch | undefined,
  ): StoredEvent;
  /**
   * Deletes delivered and failed events received more than `retentionDays` ago (payloads,
   * attempts and idempotency keys included), oldest first, at most `maxRows` (default 1000) so
   * one call never holds the event loop long. Queued and running events are kept. A batch first
   * waits (asynchronously, 2 s at most) until a checkpoint pass has copied the writes before it,
   * so that batches in a row keep the WAL at about one batch, not at what they deleted.
   * @returns how many events were deleted; a full batch means there may be more
   * @throws StoreUnavailableError when the database refuses the delete
   */
  prune(
    nowMs: number,
    options: { retentionDays: number; maxRows?: number },
  ): Promise<{ events: number }>;
  /** Commits the pending batch, then closes the database. Later calls reject or throw. */
  close(): Promise<void>;
}
