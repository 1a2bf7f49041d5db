/**
 * The SQLite implementation of {@link StateStore}.
 *
 * @module
 */
import { type FileIdentity, fileIdentity, sameFile } from "../fs.ts";
import { ConflictError, NotFoundError, StoreUnavailableError, UsageError } from "../errors.ts";
import { corruption, databaseErrorText, type DatabaseOptions, openDatabase } from "./_database.ts";
import { createGroupCommit, type GroupCommitStats } from "./_group_commit.ts";
import { listEvents, prune, recoverInterrupted, replayEvent } from "./_maintenance.ts";
import {
  createIdGenerator,
  cryptoRandom,
  needsAgentRun,
  rowToAttempt,
  rowToEvent,
  storableText,
} from "./_schema.ts";
import type {
  AcceptResult,
  DirectOutcome,
  EventStatus,
  NewEvent,
  StateStore,
  StoredEvent,
} from "./mod.ts";

/** Options of {@link openStateStore}. */
export interface StateStoreOptions extends DatabaseOptions {
  /** How long a delivery id is remembered, in seconds. @default {86400} */
  idempotencyTtlSeconds?: number;
  /** A batch is committed at once when it holds this many writes. @default {512} */
  maxBatch?: number;
  /** Event id generator. @default time-sortable `evt_` + 16 base-36 characters */
  newId?: () => string;
  /** Clock for what the store timestamps itself (direct-mode records). @default {Date.now} */
  now?: () => number;
  /**
   * Called once, the first time SQLite reports the file corrupt ("database disk image is
   * malformed", "file is not a database"), with its message: the gateway stops then, rather
   * than go on acknowledging events into a file it cannot trust. The call that met it still
   * throws StoreUnavailableError.
   */
  onCorrupt?: (reason: string) => void;
}

/** The SQLite store, with counters for tests and diagnostics. */
export interface SqliteStateStore extends StateStore {
  /** Group-commit counters: `commits` transactions holding `operations` writes. */
  stats(): GroupCommitStats;
}

type Row = Record<string, unknown>;

/** Longest a prune batch waits for the checkpoint of the one before, in ms. */
const PRUNE_CHECKPOINT_WAIT_MS = 2000;

/**
 * Opens the state database (`state/gateway.db`), creating its folder (mode 0700) and tables.
 *
 * Durability: the database is in WAL mode. With `synchronous: "NORMAL"` (default) a committed
 * event survives a crash of the gateway process (kill -9) but not necessarily a power loss or
 * an OS crash; `synchronous: "FULL"` survives those too, at the cost of one fsync per batch.
 * @param path the database file (`:memory:` for a throwaway store)
 * @param options see {@link StateStoreOptions}
 * @returns the store; close it with `close()`
 * @throws StoreUnavailableError when the folder or the file cannot be created or opened
 */
export function openStateStore(path: string, options: StateStoreOptions = {}): SqliteStateStore {
  const database = openDatabase(path, options);
  const { db, statements: s, transaction } = database;
  const ttlMs = (options.idempotencyTtlSeconds ?? 86_400) * 1000;
  const clock = options.now ?? Date.now;
  const newId = options.newId ?? createIdGenerator(Date.now, cryptoRandom);
  const file = path === ":memory:" ? undefined : fileIdentity(path);
  // The write-ahead log this connection writes to, as it was when the store opened (SQLite opens
  // it with the database), else once a commit has written to it; a file system without WAL
  // support has none, and then only the database is checked. (A deleted `-shm` loses nothing:
  // the gateway's watch sees it, and the gateway exits.)
  let log: FileIdentity | undefined = file === undefined ? undefined : fileIdentity(`${path}-wal`);
  let corruptSeen = false;
  /** Tells `options.onCorrupt`, once, when a failure says the file is corrupt. */
  function noteCorruption(error: unknown): void {
    const reason = corruption(error);
    if (reason === undefined || corruptSeen) return;
    corruptSeen = true;
    options.onCorrupt?.(reason);
  }
  const commits = createGroupCommit((run) => {
    // A batch goes only into the files this connection opened. If the database is no longer
    // the file at `path` (deleted, or replaced by a restored backup), nobody will open it again;
    // if its log was deleted, a crash would lose what goes into it. Either way the batch is
    // refused before it is written: its writers get StoreUnavailableError (503, so the senders
    // retry) instead of a 202 for an event that may be gone. Two stats per batch, where the
    // gateway's watch looks once a second.
    if (file !== undefined) {
      for (const [name, ours] of [[path, file], [`${path}-wal`, log]] as const) {
        if (ours !== undefined && !sameFile(fileIdentity(name), ours)) {
          throw new StoreUnavailableError(
            `${name} was deleted or replaced while the store had it open`,
          );
        }
      }
    }
    try {
      transaction(run);
    } catch (error) {
      noteCorruption(error);
      throw error;
    }
    if (file !== undefined) log ??= fileIdentity(`${path}-wal`);
  }, {
    maxBatch: options.maxBatch,
    beforeBatch: database.beforeBatch,
    // A refused batch held the event loop for the busy timeout: for as long again, batches are
    // refused at once (503), not each held as long, so at most half the loop waits on a lock.
    failFastMs: path === ":memory:" ? 0 : Math.max(0, options.busyTimeoutMs ?? 5000),
  });
  let closed = false;

  /** Runs a synchronous call, reporting database failures as StoreUnavailableError. */
  function use<T>(run: () => T): T {
    if (closed) throw new StoreUnavailableError("The state store is closed");
    try {
      return run();
    } catch (error) {
      if (
        error instanceof NotFoundError || error instanceof UsageError ||
        error instanceof ConflictError
      ) throw error;
      if (error instanceof StoreUnavailableError) throw error;
      noteCorruption(error);
      throw new StoreUnavailableError(`State database error: ${databaseErrorText(error, path)}`, {
        cause: error,
      });
    }
  }

  /**
   * Inserts an event row; `keyExpiresAtMs` non-null makes it hold the idempotency key of its
   * (subscription, delivery id) until then.
   * @returns false when another row holds that key (nothing was inserted)
   */
  function insertEvent(
    id: string,
    event: NewEvent,
    progress: Progress,
    keyExpiresAtMs: number | null,
  ): boolean {
    const inserted = s.insertEvent.run(
      id,
      event.subscription,
      event.eventType,
      event.deliveryId,
      event.dedupe ? 1 : 0,
      event.source,
      event.mode,
      event.payload,
      storableText(event.prompt),
      JSON.stringify(event.route),
      event.receivedAtMs,
      progress.status,
      progress.attempts,
      progress.nextAttemptAtMs,
      null,
      progress.partsSent,
      progress.lastError === null ? null : storableText(progress.lastError),
      progress.updatedAtMs,
      keyExpiresAtMs,
    );
    return Number(inserted.changes) === 1;
  }

  function acceptNow(event: NewEvent): AcceptResult {
    const nowMs = event.receivedAtMs;
    const id = newId();
    const progress: Progress = {
      status: "queued",
      attempts: 0,
      nextAttemptAtMs: nowMs,
      partsSent: 0,
      lastError: null,
      updatedAtMs: nowMs,
    };
    // One statement in the common case: the insert itself is the duplicate check. An event
    // without a real delivery id holds no key, so it is always inserted.
    const keyExpiresAtMs = event.dedupe ? nowMs + ttlMs : null;
    if (insertEvent(id, event, progress, keyExpiresAtMs)) {
      return { status: "accepted", eventId: id };
    }
    const { subscription, deliveryId } = event;
    const holder = liveKeyHolder(subscription, deliveryId, nowMs);
    if (holder !== undefined) return { status: "duplicate", eventId: holder };
    // The key has expired: the new event takes it over.
    s.releaseKey.run(subscription, deliveryId);
    insertEvent(id, event, progress, keyExpiresAtMs);
    return { status: "accepted", eventId: id };
  }

  function recordDirectNow(event: NewEvent, outcome: DirectOutcome): string {
    const nowMs = outcome.atMs ?? clock();
    const lastError = outcome.delivered ? null : storableText(outcome.error ?? "delivery failed");
    const holdsKey = outcome.delivered && event.dedupe;
    // A delivered message takes the key over from any earlier holder, expired or not.
    if (holdsKey) s.releaseKey.run(event.subscription, event.deliveryId);
    if (outcome.progressId !== undefined) {
      // The record of its progress becomes the record of the outcome, unless a replay took it
      // over meanwhile (or it is gone): then the outcome is recorded on its own.
      const finished = s.finishDirect.run(
        outcome.delivered ? "delivered" : "failed",
        outcome.partsSent,
        lastError,
        nowMs,
        holdsKey ? nowMs + ttlMs : null,
        outcome.progressId,
        DIRECT_IN_PROGRESS,
      );
      if (finished.changes === 1) {
        s.closeAttempt.run(nowMs, "delivery", lastError, outcome.progressId);
        return outcome.progressId;
      }
    }
    const id = newId();
    insertEvent(id, event, {
      status: outcome.delivered ? "delivered" : "failed",
      attempts: 1,
      nextAttemptAtMs: null,
      partsSent: outcome.partsSent,
      lastError,
      updatedAtMs: nowMs,
    }, holdsKey ? nowMs + ttlMs : null);
    s.insertAttempt.run(id, 1, event.receivedAtMs, nowMs, "delivery", lastError);
    return id;
  }

  /**
   * Refuses to replay a failed direct message whose delivery id a later event holds, expired
   * or not: the sender's own retry delivered it (or is being sent), so a replay would send it
   * twice.
   * @throws ConflictError naming that event
   */
  function refuseSuperseded(event: StoredEvent): void {
    if (event.mode !== "direct" || event.status === "delivered" || !event.dedupe) return;
    const holder = s.keyHolder.get(event.subscription, event.deliveryId) as Row | undefined;
    if (holder === undefined || String(holder.id) === event.id) return;
    const other = findEvent(String(holder.id));
    // An older message that reused the delivery id past its key's life is not this one's retry.
    if (other !== null && other.receivedAtMs <= event.receivedAtMs) return;
    throw new ConflictError(
      `Not replayed: the sender retried delivery ${event.deliveryId} after ${event.id} failed, ` +
        `and that retry is event ${holder.id} (${other?.status ?? "unknown"}); replaying ` +
        `${event.id} would send the message twice. To send it once more anyway: ` +
        `agent webhook replay ${holder.id}`,
    );
  }

  /**
   * The most parts that failed direct attempts at the same message (subscription, delivery id,
   * text and route, within the key's life) got out.
   */
  function mostPartsSent(event: NewEvent): number {
    const row = s.partsSentByFailedAttempts.get(
      event.subscription,
      event.deliveryId,
      storableText(event.prompt),
      JSON.stringify(event.route),
      event.receivedAtMs - ttlMs,
    ) as Row | undefined;
    return Number(row?.parts ?? 0);
  }

  /** See {@link StateStore.resumeAfter}. */
  function resumeAfter(event: StoredEvent): number {
    if (s.everDelivered.get(event.id) !== undefined) return event.partsSent;
    return Math.max(event.partsSent, mostPartsSent(event));
  }

  /** The id of the event holding a delivery id's key unexpired at `nowMs`, if any. */
  function liveKeyHolder(subscription: string, deliveryId: string, nowMs: number) {
    const holder = s.keyHolder.get(subscription, deliveryId) as Row | undefined;
    return holder && Number(holder.key_expires_at) > nowMs ? String(holder.id) : undefined;
  }

  /**
   * A delivered event that holds no key (a replayed direct message, recorded failed) takes its
   * delivery id's key, unless another event holds it unexpired: the sender's retry of that
   * delivery id is then a duplicate instead of a second copy of the message.
   */
  function takeKey(eventId: string, subscription: string, deliveryId: string, nowMs: number) {
    if (liveKeyHolder(subscription, deliveryId, nowMs) !== undefined) return;
    s.releaseKey.run(subscription, deliveryId);
    s.setKey.run(nowMs + ttlMs, eventId);
  }

  function findEvent(idOrPrefix: string): StoredEvent | null {
    const exact = s.byId.get(idOrPrefix) as Row | undefined;
    if (exact) return rowToEvent(exact);
    if (idOrPrefix === "") return null;
    const rows = s.byPrefix.all(idOrPrefix, idOrPrefix + "\uffff") as Row[];
    if (rows.length > 1) {
      const some = rows.map((row) => String(row.id)).join(", ");
      throw new NotFoundError(`Event id prefix "${idOrPrefix}" is ambiguous: ${some}, ...`);
    }
    return rows.length === 1 ? rowToEvent(rows[0]) : null;
  }

  function mustFind(idOrPrefix: string): StoredEvent {
    const event = findEvent(idOrPrefix);
    if (!event) throw new NotFoundError(`No event "${idOrPrefix}"`);
    return event;
  }

  function update(eventId: string, run: () => { changes: number | bigint }): void {
    if (Number(run().changes) === 0) throw new NotFoundError(`No event "${eventId}"`);
  }

  function closeAttempt(
    eventId: string,
    status: { status: EventStatus; error: string; step: string; nextMs: number | null },
    nowMs: number,
  ): void {
    status = { ...status, error: storableText(status.error) };
    use(() =>
      transaction(() => {
        update(
          eventId,
          () => s.setStatus.run(status.status, status.nextMs, status.error, nowMs, eventId),
        );
        s.closeAttempt.run(nowMs, status.step, status.error, eventId);
        // A direct message that failed holds no key (as when recorded failed): the sender's
        // next retry of its delivery id must go through, not be answered as a duplicate.
        if (status.status === "failed") s.releaseFailedDirectKey.run(eventId);
      })
    );
  }

  return {
    accept: (event) => commits.submit(() => acceptNow(event)),
    recordDirect: (event, outcome) => commits.submit(() => recordDirectNow(event, outcome)),
    recordDirectProgress: (event, partsSent, progressId) =>
      commits.submit(() => {
        if (progressId !== undefined) {
          update(progressId, () => s.setPartsSent.run(partsSent, clock(), progressId));
          return progressId;
        }
        return recordDirectNow(event, {
          delivered: false,
          error: DIRECT_IN_PROGRESS,
          partsSent,
        });
      }),
    partsSentByFailedAttempts: (event) => use(() => mostPartsSent(event)),
    resumeAfter: (event) => use(() => resumeAfter(event)),
    keyHolder: (subscription, deliveryId, nowMs) =>
      use(() => {
        if (nowMs !== undefined) return liveKeyHolder(subscription, deliveryId, nowMs) ?? null;
        const holder = s.keyHolder.get(subscription, deliveryId) as Row | undefined;
        return holder === undefined ? null : String(holder.id);
      }),
    wasDelivered: (eventId) => use(() => s.everDelivered.get(eventId) !== undefined),
    claimDue(nowMs, limit, options = {}) {
      if (limit <= 0) return [];
      const claimed: StoredEvent[] = [];
      const next = use(() => s.nextDue.get() as Row | undefined)?.due;
      // A read first: most calls find nothing due and need not take the write lock.
      if (next === null || next === undefined || Number(next) > nowMs) return claimed;
      const due = options.deliveryOnly ? s.dueForDelivery : s.due;
      if (options.deliveryOnly && use(() => due.get(nowMs, 1)) === undefined) return claimed;
      use(() =>
        transaction(() => {
          for (const row of due.all(nowMs, limit) as Row[]) {
            const event = rowToEvent(row);
            s.claim.run(nowMs, event.id);
            const step = needsAgentRun(event) ? "agent" : "delivery";
            s.insertAttempt.run(event.id, event.attempts + 1, nowMs, null, step, null);
            claimed.push({
              ...event,
              status: "running",
              attempts: event.attempts + 1,
              nextAttemptAtMs: null,
              updatedAtMs: nowMs,
            });
          }
        })
      );
      return claimed;
    },
    saveResponse: (eventId, response) =>
      use(() =>
        transaction(() => {
          update(eventId, () => s.saveResponse.run(storableText(response), clock(), eventId));
          s.agentDone.run(eventId);
        })
      ),
    savePartsSent: (eventId, partsSent, attempt) =>
      use(() =>
        update(
          eventId,
          () => s.savePartsSent.run(partsSent, clock(), attempt.sentBefore, attempt.parts, eventId),
        )
      ),
    markDelivered: (eventId, nowMs) =>
      use(() =>
        transaction(() => {
          const row = s.delivered.get(nowMs, eventId) as Row | undefined;
          if (row === undefined) throw new NotFoundError(`No event "${eventId}"`);
          s.closeAttempt.run(nowMs, "delivery", null, eventId);
          const keyLive = row.key_expires_at !== null && Number(row.key_expires_at) > nowMs;
          if (row.dedupe === 1 && !keyLive) {
            takeKey(eventId, String(row.subscription), String(row.delivery_id), nowMs);
          }
        })
      ),
    markRetry: (eventId, error, step, nextMs, nowMs) =>
      closeAttempt(eventId, { status: "queued", error, step, nextMs }, nowMs),
    markFailed: (eventId, error, step, nowMs) =>
      closeAttempt(eventId, { status: "failed", error, step, nextMs: null }, nowMs),
    recoverInterrupted: (nowMs, eventId) =>
      use(() => recoverInterrupted(db, transaction, nowMs, eventId)),
    nextDueAtMs: () =>
      use(() => {
        const row = s.nextDue.get() as Row | undefined;
        return row?.due === null || row?.due === undefined ? null : Number(row.due);
      }),
    moveQueued: (byMs) =>
      use(() => {
        let moved = 0;
        // In a transaction of the store's, so that a checkpoint pass follows it.
        transaction(() => {
          moved = Number(
            db.prepare(
              "UPDATE events SET next_attempt_at = next_attempt_at + ? WHERE status = 'queued'",
            ).run(Math.round(byMs)).changes,
          );
        });
        return moved;
      }),
    listEvents: (filter) => use(() => listEvents(db, filter)),
    getEvent: (eventId) => use(() => findEvent(eventId)),
    attempts: (eventId) =>
      use(() => {
        const id = findEvent(eventId)?.id ?? eventId;
        return (s.attempts.all(id) as Row[]).map(rowToAttempt);
      }),
    replay: (eventId, nowMs, redispatch) =>
      use(() => {
        const event = mustFind(eventId);
        refuseSuperseded(event);
        let replayed = event;
        transaction(() => {
          const dispatch = redispatch?.(event);
          replayed = replayEvent(
            db,
            event,
            nowMs,
            dispatch && { ...dispatch, prompt: storableText(dispatch.prompt) },
          );
          if (replayed.mode !== "direct" || !replayed.dedupe) return;
          // A direct message to send again takes its delivery id now, not once delivered: the
          // sender's retry meanwhile is then told to wait (409), instead of sending a copy.
          takeKey(replayed.id, replayed.subscription, replayed.deliveryId, nowMs);
          const resume = resumeAfter(replayed);
          if (resume > replayed.partsSent) {
            s.setPartsSent.run(resume, nowMs, replayed.id);
            replayed = { ...replayed, partsSent: resume };
          }
        });
        return replayed;
      }),
    async prune(nowMs, options) {
      // Batch after batch, a prune outran the checkpoints, and the WAL grew by about what it
      // deleted (767 MB beside an 863 MB database). Each batch waits for the last one's pages
      // to be copied, so the WAL starts over every batch.
      await database.checkpointed(PRUNE_CHECKPOINT_WAIT_MS);
      return use(() =>
        prune(db, transaction, nowMs, {
          retentionDays: options.retentionDays,
          maxRows: options.maxRows ?? 1000,
        })
      );
    },
    stats: () => commits.stats(),
    async close() {
      if (closed) return;
      commits.close();
      closed = true;
      await database.close();
    },
  };
}

interface Progress {
  status: EventStatus;
  attempts: number;
  nextAttemptAtMs: number | null;
  partsSent: number;
  lastError: string | null;
  updatedAtMs: number;
}

/**
 * The error of a direct message of several parts while it is being sent (see
 * `recordDirectProgress`): what it says if the gateway stops before the outcome is recorded.
 */
const DIRECT_IN_PROGRESS = "interrupted: the gateway stopped while sending this message, after " +
  "the parts counted here; a retry of the same delivery id, or agent webhook replay, sends the " +
  "rest";
