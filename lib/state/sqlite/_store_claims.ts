// deno-lint-ignore-file require-await -- async by StateStore's contract, synchronous inside
/**
 * The worker's side of the store: claiming due events, saving an attempt's answer and parts
 * delivered, closing it as delivered, to retry or failed, requeueing events a stop or crash
 * left running, and the queue's next due time.
 *
 * @module
 */
import { NotFoundError } from "../../errors.ts";
import { recoverInterrupted } from "./_maintenance.ts";
import { insertReceipts } from "./_store_accept.ts";
import { rowToEvent } from "../_rows.ts";
import { foldOnClaim, settleFolded } from "./_store_coalesce.ts";
import { recordTurn } from "./_store_sessions.ts";
import type { Row, StoreCore } from "./_store_core.ts";
import {
  type AgentRun,
  type EventStatus,
  needsAgentRun,
  type PartReceipt,
  storableText,
  type StoredEvent,
} from "../mod.ts";
import type { ClaimOps } from "../_ops.ts";

/**
 * The store's methods that the worker runs events with.
 * @param core the store
 * @returns the methods, as {@link StateStore} documents them
 */
export function claimOps(core: StoreCore): ClaimOps {
  const { db, s, transaction, use, clock } = core;
  return {
    claimDue: async (nowMs, limit, options = {}) => claimDue(core, { nowMs, limit, ...options }),
    saveResponse: async (eventId, response, run, prompt) =>
      use(() => saveResponse(core, { eventId, response, run, prompt })),
    saveTransformed: async (eventId, transformed, prompt) =>
      use(() =>
        core.update(
          eventId,
          () => s.saveTransformed.run(transformed, storableText(prompt), clock(), eventId),
        )
      ),
    savePartsSent: async (eventId, partsSent, attempt) =>
      use(() => savePartsSent(core, { eventId, partsSent, ...attempt })),
    markDelivered: async (eventId, nowMs) => use(() => markDelivered(core, { eventId, nowMs })),
    markRetry: async (eventId, retry) =>
      closeAttempt(core, {
        eventId,
        status: "queued",
        error: retry.error,
        step: retry.step,
        nextMs: retry.nextAttemptAtMs,
        nowMs: retry.nowMs,
      }),
    markFailed: async (eventId, { error, step, nowMs }) =>
      closeAttempt(core, { eventId, status: "failed", error, step, nextMs: null, nowMs }),
    recoverInterrupted: async (nowMs, eventId) =>
      use(() => recoverInterrupted(db, transaction, nowMs, eventId)),
    nextDueAtMs: async () =>
      use(() => {
        const row = s.nextDue.get() as Row | undefined;
        return row?.due === null || row?.due === undefined ? null : Number(row.due);
      }),
    moveQueued: async (byMs) => use(() => moveQueued(core, byMs)),
  };
}

/** See {@link StateStore.saveResponse}. */
function saveResponse(
  core: StoreCore,
  saved: { eventId: string; response: string; run?: AgentRun; prompt?: string },
): void {
  const { eventId, run, prompt } = saved;
  core.transaction(() => {
    const answer = storableText(saved.response);
    // First: the turn is dated by the event's claim, the worker's clock.
    recordTurn(core, { eventId, answer, prompt });
    core.update(eventId, () => core.s.saveResponse.run(answer, core.clock(), eventId));
    core.s.agentDone.run(
      run?.provider ?? null,
      run?.model ?? null,
      run?.promptTokens ?? null,
      run?.completionTokens ?? null,
      run === undefined ? null : Math.round(run.durationMs),
      answer,
      eventId,
    );
  });
}

/** See {@link StateStore.savePartsSent}. */
function savePartsSent(
  core: StoreCore,
  saved: {
    eventId: string;
    partsSent: number;
    sentBefore: number;
    parts: number;
    receipts?: PartReceipt[];
  },
): void {
  const { eventId, receipts } = saved;
  const save = () =>
    core.update(
      eventId,
      () =>
        core.s.savePartsSent.run(
          saved.partsSent,
          core.clock(),
          saved.sentBefore,
          saved.parts,
          eventId,
        ),
    );
  if (!receipts?.length) return save();
  core.transaction(() => {
    save();
    insertReceipts(core, eventId, receipts);
  });
}

/** See {@link StateStore.moveQueued}. */
function moveQueued(core: StoreCore, byMs: number): number {
  let moved = 0;
  // In a transaction of the store's, so that a checkpoint pass follows it.
  core.transaction(() => {
    moved = Number(
      core.db.prepare(
        "UPDATE events SET next_attempt_at = next_attempt_at + ? WHERE status = 'queued'",
      ).run(Math.round(byMs)).changes,
    );
  });
  return moved;
}

/** See {@link StateStore.claimDue}. */
function claimDue(
  core: StoreCore,
  claim: { nowMs: number; limit: number; deliveryOnly?: boolean },
): StoredEvent[] {
  const { s, use } = core;
  const { nowMs, limit } = claim;
  if (limit <= 0) return [];
  const claimed: StoredEvent[] = [];
  const next = use(() => s.nextDue.get() as Row | undefined)?.due;
  // A read first: most calls find nothing due and need not take the write lock.
  if (next === null || next === undefined || Number(next) > nowMs) return claimed;
  const due = claim.deliveryOnly ? s.dueForDelivery : s.due;
  if (claim.deliveryOnly && use(() => due.get(nowMs, 1)) === undefined) return claimed;
  use(() =>
    core.transaction(() => {
      const folded = new Set<string>();
      for (const row of due.all(nowMs, limit) as Row[]) {
        const event = rowToEvent(row);
        if (folded.has(event.id)) continue; // folded into an earlier event's run just now
        s.claim.run(nowMs, event.id);
        for (const id of foldOnClaim(core, event, nowMs)) folded.add(id);
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
}

/** See {@link StateStore.markDelivered}. */
function markDelivered(core: StoreCore, { eventId, nowMs }: { eventId: string; nowMs: number }) {
  const { s } = core;
  core.transaction(() => {
    const row = s.delivered.get(nowMs, eventId) as Row | undefined;
    if (row === undefined) throw new NotFoundError(`No event "${eventId}"`);
    s.closeAttempt.run(nowMs, "delivery", null, eventId);
    settleFolded(core, eventId, { status: "delivered", nowMs });
    const keyLive = row.key_expires_at !== null && Number(row.key_expires_at) > nowMs;
    if (row.dedupe === 1 && !keyLive) {
      core.takeKey({
        id: eventId,
        subscription: String(row.subscription),
        deliveryId: String(row.delivery_id),
      }, nowMs);
    }
  });
}

/**
 * Closes a running event's attempt with its error, and the event with its new status.
 * @param attempt `status`: `queued` (due at `nextMs`) or `failed`; `step`: the one it failed at
 */
function closeAttempt(
  core: StoreCore,
  attempt: {
    eventId: string;
    status: EventStatus;
    error: string;
    step: string;
    nextMs: number | null;
    nowMs: number;
  },
): void {
  const { s } = core;
  const { eventId, nowMs } = attempt;
  const status = { ...attempt, error: storableText(attempt.error) };
  core.use(() =>
    core.transaction(() => {
      core.update(
        eventId,
        () => s.setStatus.run(status.status, status.nextMs, status.error, nowMs, eventId),
      );
      s.closeAttempt.run(nowMs, status.step, status.error, eventId);
      // A direct message that failed holds no key (as when recorded failed): the sender's
      // next retry of its delivery id must go through, not be answered as a duplicate.
      if (status.status === "failed") s.releaseFailedDirectKey.run(eventId);
      if (status.status === "failed") {
        settleFolded(core, eventId, { status: "failed", error: status.error, nowMs });
      }
    })
  );
}
