/**
 * The durable state of the gateway (docs/durability.md): accepted events, their attempts, and
 * the idempotency keys of their delivery ids. This is the face every backend implements: the
 * records, the {@link StateStore} interface, and the rules the backends share. The backends are
 * `lib/state/sqlite/` (the default, in the home) and `lib/state/postgres/` (shared by several
 * gateways), checked by the same conformance suite (`tests/lib/state/conformance/`);
 * `lib/state/open.ts` opens the one `state.backend` names (docs/configuration.md#state).
 *
 * An agent-mode event is answered 202 only after {@link StateStore.accept} has committed it; the
 * worker then moves it `queued → running → delivered | failed`, and a replay queues it again.
 * Idempotency keys are kept per subscription and delivery id, for `idempotencyTtlSeconds` or
 * until their event is pruned, whichever comes first.
 *
 * Every method answers with a promise, whatever the backend: SQLite's answers in-process
 * (`async` methods around synchronous work), PostgreSQL's over the network. A caller awaits each
 * call, and does not count on nothing else running between a check and the write that follows
 * it: what must not interleave is decided by the store in one call (a claim, a key's holder).
 *
 * Every method rejects with `StoreUnavailableError` (`lib/errors.ts`) once the store is closed,
 * or when the database refuses the call: a full disk, a lock held too long, a file deleted or
 * corrupt, a server that cannot be reached.
 *
 * @example An agent-mode event's life
 * ```ts
 * import { openStateStore } from "./sqlite/mod.ts";
 *
 * const store = openStateStore("state/gateway.db", { idempotencyTtlSeconds: 86_400 });
 * const result = await store.accept(event); // answer 202 once this resolves
 * for (const claimed of await store.claimDue(Date.now(), 8)) { // now running, attempt 1 open
 *   await store.saveResponse(claimed.id, answer); // a delivery retry does not run the agent again
 *   await store.markDelivered(claimed.id, Date.now());
 * }
 * await store.close();
 * ```
 *
 * @module
 */
import type { AgentRun, EventDispatch, PartReceipt, SessionTurn, StoredEvent } from "./_records.ts";
import type { EventIntake } from "./_intake.ts";
import type { EventReads } from "./_reads.ts";

export type {
  AcceptResult,
  AgentRun,
  Attempt,
  DirectOutcome,
  EventDispatch,
  EventSource,
  EventStatus,
  Lineage,
  NewEvent,
  PartReceipt,
  SessionTurn,
  StoredEvent,
} from "./_records.ts";
export type {
  CoalesceSnapshot,
  RouteAgentOptions,
  RouteSnapshot,
  TransformSnapshot,
} from "./_route_snapshot.ts";
export type {
  ActivityMinute,
  EventFilter,
  EventReads,
  QueueStats,
  SubscriptionCounts,
} from "./_reads.ts";
export type { EventIntake } from "./_intake.ts";
export { needsAgentRun, REDACTED, storableText } from "./_records.ts";
export { createIdGenerator, cryptoRandom } from "./_event_ids.ts";

/** What every backend's `open` takes; a backend adds its own options to these. */
export interface StateStoreOptions {
  /** How long a delivery id is remembered, in seconds. @default {86400} */
  idempotencyTtlSeconds?: number;
  /** Event id generator. @default {@link createIdGenerator}`(Date.now, cryptoRandom)` */
  newId?: () => string;
  /** Clock for what the store timestamps itself (direct-mode records), in ms. @default Date.now */
  now?: () => number;
  /**
   * How long a turn of a conversation is remembered, in seconds (`session_ttl`,
   * docs/subscriptions.md#conversations). @default {604800}
   */
  sessionTtlSeconds?: number;
}

/**
 * The state database, as the receiver, the worker and the CLI use it (taking events in:
 * {@link EventIntake}; reads: {@link EventReads}).
 */
export interface StateStore extends EventIntake, EventReads {
  /**
   * Claims events that are queued and due: they become `running`, `attempts` grows by one and
   * an attempt is opened (at the step `agent`, or `delivery` when no agent run is needed).
   * @param nowMs current time, in ms since the epoch
   * @param limit most events to claim (0 or less: none)
   * @param options `deliveryOnly`: only events whose next step is a delivery (a direct message,
   *   or an agent's answer already saved), not those waiting for an agent run
   * @returns the claimed events as they are now, earliest due first
   * @throws StoreUnavailableError when the database refuses the claim
   */
  claimDue(
    nowMs: number,
    limit: number,
    options?: { deliveryOnly?: boolean },
  ): Promise<StoredEvent[]>;
  /**
   * Persists the agent's answer, so a delivery retry does not run the agent again; the open
   * attempt moves on to the step `delivery`, and keeps the answer and the run (provider, model,
   * tokens, duration) for {@link lineage}, whatever later replays do to the event's answer. An
   * agent-mode event with a `sessionKey` also gets a turn of its conversation (its prompt and
   * this answer, see {@link sessionTurns}) in the same transaction: a crash keeps both or
   * neither.
   * @param eventId the running event
   * @param response the answer
   * @param run the run that gave it; its fields are null on the attempt when omitted
   * @param prompt the prompt the run was given, which the turn keeps (a coalesced run's lists
   *   several events); @default the event's own prompt
   * @throws NotFoundError when no event has this id
   * @throws StoreUnavailableError when the database refuses the write
   */
  saveResponse(eventId: string, response: string, run?: AgentRun, prompt?: string): Promise<void>;
  /**
   * Persists what the event's transform printed and the prompt rendered from it
   * (docs/subscriptions.md#transforms), once the worker ran a transform that failed at ingest
   * or that a replay runs again; `{"skip":true}` with the prompt unchanged when it skipped.
   * @param eventId the running event
   * @param transformed the transform's JSON, as printed
   * @param prompt the prompt (or direct message) rendered from it
   * @throws NotFoundError when no event has this id
   * @throws StoreUnavailableError when the database refuses the write
   */
  saveTransformed(eventId: string, transformed: string, prompt: string): Promise<void>;
  /**
   * The turns of a conversation remembered at `nowMs` (written less than `sessionTtlSeconds`
   * before it), oldest first: what the next run of the conversation is given
   * (docs/subscriptions.md#conversations). At most the newest 200.
   * @param subscription the subscription's name
   * @param sessionKey the rendered conversation key
   * @param nowMs current time, in ms since the epoch
   * @returns the turns, in the order their answers were saved
   * @throws StoreUnavailableError when the database cannot be read
   */
  sessionTurns(subscription: string, sessionKey: string, nowMs: number): Promise<SessionTurn[]>;
  /**
   * Persists how many message parts were delivered, so none is sent twice after a crash. An
   * attempt that got a part out with more parts to go moved the delivery on: it does not count
   * toward the retry limit, whether it then fails or a crash cuts it off. So the first such save
   * of an attempt adds it to {@link StoredEvent.uncountedAttempts}.
   * @param eventId the running event
   * @param partsSent parts delivered so far, this attempt's included
   * @param attempt `sentBefore`: parts delivered when the attempt began (its `partsSent` as
   *   claimed); `parts`: the parts of the whole message; `receipts`: what the platform answered
   *   for the parts delivered since the last save, recorded in the same transaction
   * @throws NotFoundError when no event has this id
   * @throws StoreUnavailableError when the database refuses the write
   */
  savePartsSent(
    eventId: string,
    partsSent: number,
    attempt: { sentBefore: number; parts: number; receipts?: PartReceipt[] },
  ): Promise<void>;
  /**
   * Marks a running event delivered and closes its attempt. An event with a delivery id that
   * holds no idempotency key (a direct message recorded failed, then replayed) takes the key,
   * unless another event holds it unexpired, so the sender's retry is then a duplicate.
   * @param nowMs current time, in ms since the epoch
   * @throws NotFoundError when no event has this id
   * @throws StoreUnavailableError when the database refuses the write
   */
  markDelivered(eventId: string, nowMs: number): Promise<void>;
  /**
   * Closes the attempt with its error and queues the event again, due at `nextAttemptAtMs`.
   * @param eventId the running event
   * @param retry `error`: why the attempt failed; `step`: the step it failed at;
   *   `nextAttemptAtMs`: when it is due again and `nowMs`: now, both in ms since the epoch
   * @throws NotFoundError when no event has this id
   * @throws StoreUnavailableError when the database refuses the write
   */
  markRetry(
    eventId: string,
    retry: { error: string; step: "agent" | "delivery"; nextAttemptAtMs: number; nowMs: number },
  ): Promise<void>;
  /**
   * Closes the attempt with its error and marks the event `failed` (dead letter). A direct
   * message never delivered gives up its delivery id's key, so the sender's retry goes through.
   * @param eventId the running event
   * @param failure `error`: why the attempt failed; `step`: the step it failed at; `nowMs`:
   *   now, in ms since the epoch
   * @throws NotFoundError when no event has this id
   * @throws StoreUnavailableError when the database refuses the write
   */
  markFailed(
    eventId: string,
    failure: { error: string; step: "agent" | "delivery"; nowMs: number },
  ): Promise<void>;
  /**
   * Puts events left `running` by a crash or restart back in the queue, due now, their open
   * attempt closed as interrupted. After a crash (at start) it still counts, unless it had
   * delivered a part (see {@link savePartsSent}); after a graceful stop it does not.
   * @param nowMs current time, in ms since the epoch
   * @param eventId only this event (the worker's own run, ended by a graceful stop, which
   *   does not count); every running event when omitted (at start)
   * @returns how many were requeued
   * @throws StoreUnavailableError when the database refuses the write
   */
  recoverInterrupted(nowMs: number, eventId?: string): Promise<number>;
  /**
   * When the earliest queued event is due.
   * @returns ms since the epoch, or null when none is queued
   * @throws StoreUnavailableError when the database cannot be read
   */
  nextDueAtMs(): Promise<number | null>;
  /**
   * Moves when every queued event is due by `byMs`: the worker does when the system clock was
   * set back, so events queued before are not held until the clock catches up.
   * @param byMs milliseconds to add (negative: earlier)
   * @returns how many events were moved
   * @throws StoreUnavailableError when the database refuses the write
   */
  moveQueued(byMs: number): Promise<number>;
  /**
   * Starts a new attempt series: `queued`, due now, attempts 0, no response, no part sent;
   * except that a direct message not delivered whole, sent again with the same text and route,
   * keeps its count of parts sent, so the replay sends the rest. A direct message takes its
   * delivery id's key (unless another event holds it unexpired), so the sender's retry while
   * the replay waits is a duplicate; other keys are untouched.
   * @param eventId id or unique prefix
   * @param nowMs current time, in ms since the epoch
   * @param redispatch called with the event found: returns its new mode, prompt and route (the
   *   subscription as it is now), or undefined to keep those the event has
   * @returns the event as requeued
   * @throws NotFoundError when no event matches, or the prefix matches several
   * @throws ConflictError when the event is running, or was when the gateway last stopped, or
   *   when replaying a failed direct message would send it twice
   * @throws StoreUnavailableError when the database refuses the write
   */
  replay(
    eventId: string,
    nowMs: number,
    redispatch?: (event: StoredEvent) => EventDispatch | undefined,
  ): Promise<StoredEvent>;
  /**
   * Deletes delivered and failed events received (and, if replayed, replayed) more than
   * `retentionDays` ago, with their attempts and idempotency keys, oldest first, at most
   * `maxRows` so that one call never holds the event loop long. Queued and running events are
   * kept. Turns of conversations older than `sessionTtlSeconds` go too, at most `maxRows`. A
   * backend may wait before the batch (SQLite: for its log to be checkpointed).
   * @param nowMs current time, in ms since the epoch
   * @param options `retentionDays`: days of finished events to keep; `maxRows` @default {1000}
   * @returns how many events were deleted; a full batch means there may be more
   * @throws StoreUnavailableError when the database refuses the delete
   */
  prune(
    nowMs: number,
    options: { retentionDays: number; maxRows?: number },
  ): Promise<{ events: number }>;
  /**
   * How many gateways that take webhooks share this database now, this one included when it
   * does (at least 1), as last counted from their heartbeats: per-subscription rate limits
   * divide by it (docs/scaling.md#rate-limits). Absent from a backend of one gateway (SQLite).
   */
  liveGateways?(): number;
  /**
   * Commits the writes under way (their promises resolve), then closes the database. A second
   * call does nothing; any other later call throws (or rejects with) StoreUnavailableError.
   */
  close(): Promise<void>;
}
