// deno-lint-ignore-file require-await -- async by StateStore's contract, synchronous inside
/**
 * Taking events in: accepting an agent-mode event in the next group commit (the insert itself
 * is the duplicate check), recording a direct-mode delivery and its progress, and the parts
 * of a direct message earlier attempts already got out.
 *
 * @module
 */
import { StoreUnavailableError } from "../../errors.ts";
import { finishedProgress, type Progress, queuedProgress } from "../_progress.ts";
import type { GroupCommit } from "./_group_commit.ts";
import { coalesceAccepted } from "./_store_coalesce.ts";
import type { Row, StoreCore } from "./_store_core.ts";
import {
  type AcceptResult,
  type DirectOutcome,
  type NewEvent,
  type PartReceipt,
  storableText,
  type StoredEvent,
} from "../mod.ts";
import type { AcceptOps } from "../_ops.ts";

/**
 * The error of a direct message of several parts while it is being sent (see
 * `recordDirectProgress`): what it says if the gateway stops before the outcome is recorded.
 */
const DIRECT_IN_PROGRESS = "interrupted: the gateway stopped while sending this message, after " +
  "the parts counted here; a retry of the same delivery id, or agent webhook replay, sends the " +
  "rest";

/**
 * The store's methods that take events in.
 * @param core the store
 * @param commits its group commit, which every write here goes through
 * @returns the methods, as {@link StateStore} documents them
 */
export function acceptOps(core: StoreCore, commits: GroupCommit): AcceptOps {
  const { s, use, clock } = core;
  return {
    accept: (event) => commits.submit(() => acceptNow(core, event)),
    recordDirect: (event, outcome) =>
      commits.submit(() => recordDirectNow(core, { event, outcome })),
    recordDirectProgress: (event, partsSent, progressId) =>
      commits.submit(() => {
        if (progressId !== undefined) {
          core.update(progressId, () => s.setPartsSent.run(partsSent, clock(), progressId));
          return progressId;
        }
        return recordDirectNow(core, {
          event,
          outcome: { delivered: false, error: DIRECT_IN_PROGRESS, partsSent },
        });
      }),
    partsSentByFailedAttempts: async (event) => use(() => mostPartsSent(core, event)),
    resumeAfter: async (event) => use(() => resumeAfter(core, event)),
    keyHolder: async (subscription, deliveryId, nowMs) =>
      use(() => {
        if (nowMs !== undefined) {
          return core.liveKeyHolder({ subscription, deliveryId }, nowMs) ?? null;
        }
        const holder = s.keyHolder.get(subscription, deliveryId) as Row | undefined;
        return holder === undefined ? null : String(holder.id);
      }),
    wasDelivered: async (eventId) => use(() => s.everDelivered.get(eventId) !== undefined),
  };
}

/**
 * See {@link StateStore.resumeAfter}.
 * @param core the store
 * @param event the stored direct-mode event
 * @returns the parts it resumes after
 */
export function resumeAfter(core: StoreCore, event: StoredEvent): number {
  if (core.s.everDelivered.get(event.id) !== undefined) return event.partsSent;
  return Math.max(event.partsSent, mostPartsSent(core, event));
}

/**
 * Inserts an event row; `keyExpiresAtMs` non-null makes it hold the idempotency key of its
 * (subscription, delivery id) until then.
 * @returns false when another row holds that key (nothing was inserted)
 */
function insertEvent(
  core: StoreCore,
  event: NewEvent,
  row: { id: string; progress: Progress; keyExpiresAtMs: number | null },
): boolean {
  const { id, progress, keyExpiresAtMs } = row;
  const inserted = core.s.insertEvent.run(
    id,
    event.subscription,
    event.eventLabel,
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
    // In the same insert: keeping the headers costs ingest no statement of its own.
    event.headers === undefined ? null : JSON.stringify(event.headers),
    event.scheme ?? null,
    event.sessionKey ?? null,
    event.transformed ?? null,
  );
  return Number(inserted.changes) === 1;
}

function acceptNow(core: StoreCore, event: NewEvent): AcceptResult {
  const nowMs = event.receivedAtMs;
  const id = core.newId();
  const progress = queuedProgress(nowMs);
  // One statement in the common case: the insert itself is the duplicate check. An event
  // without a real delivery id holds no key, so it is always inserted.
  const keyExpiresAtMs = event.dedupe ? nowMs + core.ttlMs : null;
  if (insertEvent(core, event, { id, progress, keyExpiresAtMs })) {
    coalesceAccepted(core, id, event);
    return { status: "accepted", eventId: id };
  }
  const holder = core.liveKeyHolder(event, nowMs);
  if (holder !== undefined) return { status: "duplicate", eventId: holder };
  // The key has expired: the new event takes it over.
  core.s.releaseKey.run(event.subscription, event.deliveryId);
  if (!insertEvent(core, event, { id, progress, keyExpiresAtMs })) {
    // Never a 202 for an event that is not stored: the sender gets 503 and sends it again.
    throw new StoreUnavailableError(
      `the delivery id ${event.deliveryId} of ${event.subscription} is still held after its ` +
        "key was released; the event was not stored",
    );
  }
  coalesceAccepted(core, id, event);
  return { status: "accepted", eventId: id };
}

function recordDirectNow(
  core: StoreCore,
  { event, outcome }: { event: NewEvent; outcome: DirectOutcome },
): string {
  const { s, ttlMs } = core;
  const nowMs = outcome.atMs ?? core.clock();
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
      insertReceipts(core, outcome.progressId, outcome.receipts);
      return outcome.progressId;
    }
  }
  const id = core.newId();
  insertEvent(core, event, {
    id,
    progress: finishedProgress(outcome, { lastError, nowMs }),
    keyExpiresAtMs: holdsKey ? nowMs + ttlMs : null,
  });
  s.insertAttempt.run(id, 1, event.receivedAtMs, nowMs, "delivery", lastError);
  insertReceipts(core, id, outcome.receipts);
  return id;
}

/**
 * Records what the platforms answered for the parts of an event's message, inside the caller's
 * transaction.
 * @param core the store
 * @param eventId the event the parts belong to
 * @param receipts the parts' receipts, in the order they were sent; none when undefined
 */
export function insertReceipts(
  core: StoreCore,
  eventId: string,
  receipts: readonly PartReceipt[] | undefined,
): void {
  for (const receipt of receipts ?? []) {
    core.s.insertPart.run(
      eventId,
      receipt.part,
      receipt.parts,
      receipt.target,
      receipt.chat,
      receipt.messageId,
      receipt.url,
      receipt.sentAtMs,
    );
  }
}

/**
 * The most parts that failed direct attempts at the same message (subscription, delivery id,
 * text and route, within the key's life) got out.
 */
function mostPartsSent(core: StoreCore, event: NewEvent): number {
  const row = core.s.partsSentByFailedAttempts.get(
    event.subscription,
    event.deliveryId,
    storableText(event.prompt),
    JSON.stringify(event.route),
    event.receivedAtMs - core.ttlMs,
  ) as Row | undefined;
  return Number(row?.parts ?? 0);
}
