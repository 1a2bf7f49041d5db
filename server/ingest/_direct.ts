/**
 * Direct delivery (docs/http.md): the rendered template is sent to the target while the
 * sender waits; 200 when the target took it, 502 when it did not.
 *
 * @module
 */
import { errorMessage, TargetError } from "../../lib/errors.ts";
import { STORE_REFUSED_RETRY_MS } from "../../lib/worker/mod.ts";
import type { DirectOutcome, NewEvent } from "../../lib/state/mod.ts";
import type { DeliveryJob } from "../../lib/targets/mod.ts";
import { answer, duplicate, log } from "./_answers.ts";
import { answerRefusal, refusalFor } from "./_refusal.ts";
import type { IngestDeps } from "./mod.ts";

/** The key of a direct delivery under way: its subscription and delivery id. */
export const deliveryKey = (subscription: string, deliveryId: string) =>
  `${subscription}\u0000${deliveryId}`;

/**
 * Direct delivery (docs/http.md): 200 when the target took the message, 502 when it did
 * not. The delivery id is only recorded after success, so the sender's retry of a 502 goes
 * through; a failure records how many parts of a split message went out, and the retry resumes
 * after them. A retry that arrives while the first attempt is still sending gets 409. A 502
 * caused by a platform's rate limit carries its wait as `Retry-After` (seconds).
 * @param event the verified, rendered event, as it would be stored
 * @param payload the parsed JSON body, for targets that read it (a forge comment's issue)
 * @param deps the pipeline's collaborators: `deliverDirect`, `store`, `heldDirect`, `now`
 * @param directInFlight the direct deliveries under way, keyed by {@link deliveryKey}
 * @returns 200 `{"status":"delivered",…}`, a duplicate's answer when the delivery id was already
 *   delivered, 409 while an earlier attempt of it is sending (a `Refusal` answered here,
 *   as every outcome of a delivery is), or 502 `{"error":…}`; never throws for a failed
 *   delivery or a database that refuses the record
 */
export async function deliverNow(
  event: NewEvent,
  payload: unknown,
  deps: IngestDeps,
  directInFlight: Set<string>,
): Promise<Response> {
  const { subscription, eventLabel, deliveryId } = event;
  // Delivered while the database refused to record it: held in memory, a duplicate all the same.
  if (event.dedupe && deps.heldDirect?.delivered(subscription, deliveryId, event.receivedAtMs)) {
    return duplicate(subscription, eventLabel, deliveryId);
  }
  if (event.dedupe) {
    // Any holder, its key expired or not: a replay that waited longer than the key's life is
    // still this message.
    const holder = deps.store.keyHolder(subscription, deliveryId);
    const held = holder === null ? null : deps.store.getEvent(holder);
    const live = held !== null &&
      deps.store.keyHolder(subscription, deliveryId, event.receivedAtMs) !== null;
    if (
      held?.mode === "direct" && (held.status === "queued" || held.status === "running") &&
      (!live || !deps.store.wasDelivered(held.id))
    ) {
      // A replay of this message is waiting or being sent: it may still fail (or, its key
      // expired, it would be sent twice), so the sender keeps its retry and comes back once
      // that is settled. A message delivered once, its key live, is a duplicate.
      return answerRefusal(
        refusalFor(subscription, {
          status: 409,
          error: "this delivery is being sent again by a replay",
          headers: { "retry-after": "5" },
        }),
        deps.refusals,
      );
    }
    if (live) return duplicate(subscription, eventLabel, deliveryId);
  }
  const key = deliveryKey(subscription, deliveryId);
  if (event.dedupe && directInFlight.has(key)) {
    return answerRefusal(
      refusalFor(subscription, {
        status: 409,
        error: "this delivery is already being sent",
        headers: { "retry-after": "5" },
      }),
      deps.refusals,
    );
  }
  directInFlight.add(key);
  try {
    const partsAlreadySent = event.dedupe ? deps.store.partsSentByFailedAttempts(event) : 0;
    let partsSent = partsAlreadySent;
    // A message of several parts is on record from its first part on, its count kept up to
    // date before each next part, so that a crash in the middle does not make the sender's
    // retry send again what went out.
    let progress: { id?: string; refusedAtMs?: number } = {};
    const onPartSent = async (sent: number, parts: number) => {
      partsSent = sent;
      const resting = progress.refusedAtMs !== undefined &&
        Math.abs(deps.now() - progress.refusedAtMs) < STORE_REFUSED_RETRY_MS;
      if (sent < parts && !resting) {
        progress = await recordProgress(deps, event, sent, progress.id);
      }
    };
    const job: DeliveryJob = {
      target: event.route.deliver,
      chatId: event.route.chatId,
      text: event.prompt,
      payload,
      source: event.source,
      subscription,
      eventLabel,
      eventId: "",
      deliveryId,
      partsAlreadySent,
    };
    const base = { subscription, event: eventLabel, delivery_id: deliveryId };
    try {
      const receipt = await deps.deliverDirect(job, onPartSent);
      const eventId = await recordDirect(deps, event, {
        delivered: true,
        partsSent: receipt.parts,
        progressId: progress.id,
      });
      log.info("delivered {subscription} {event} to {target}", {
        ...base,
        target: receipt.target,
        parts: receipt.parts,
        event_id: eventId,
      });
      return answer(200, { status: "delivered", ...base, event_id: eventId });
    } catch (error) {
      const reason = errorMessage(error);
      const eventId = await recordDirect(deps, event, {
        delivered: false,
        error: reason,
        partsSent,
        progressId: progress.id,
      });
      log.error("failed {subscription} {event} to {target}: {reason}", {
        ...base,
        status: 502,
        target: event.route.deliver,
        reason,
        parts_sent: partsSent,
        event_id: eventId,
      });
      // A platform's rate limit is passed on: the sender's retry waits as long as it asked.
      const seconds = error instanceof TargetError ? error.retryAfterSeconds : undefined;
      const headers: Record<string, string> = seconds === undefined
        ? {}
        : { "retry-after": String(Math.ceil(seconds)) };
      return answer(502, { status: "error", error: "delivery failed", ...base }, headers);
    }
  } finally {
    directInFlight.delete(key);
  }
}

/**
 * Records the parts of a direct delivery sent so far. A store failure is logged and the
 * delivery goes on, recording its progress again only after {@link STORE_REFUSED_RETRY_MS}, as
 * the worker does: each refused write may have held the event loop for the busy timeout (a
 * locked database). The outcome is still recorded at the end.
 * @returns `id`: the event that holds the progress (`progressId` when the store failed);
 *   `refusedAtMs`: when the store refused the write
 */
async function recordProgress(
  deps: IngestDeps,
  event: NewEvent,
  partsSent: number,
  progressId: string | undefined,
): Promise<{ id?: string; refusedAtMs?: number }> {
  try {
    return { id: await deps.store.recordDirectProgress(event, partsSent, progressId) };
  } catch (error) {
    log.warn("could not record the parts sent of a direct delivery for {subscription}: {reason}", {
      subscription: event.subscription,
      reason: (error as Error).message,
    });
    return { id: progressId, refusedAtMs: deps.now() };
  }
}

/**
 * Records a direct delivery. A store failure is not turned into a wrong answer: the record is
 * held in memory and written once the database takes writes again (see `_held_direct.ts`).
 * @returns the event id, or null while the record is held
 */
async function recordDirect(
  deps: IngestDeps,
  event: NewEvent,
  outcome: DirectOutcome,
): Promise<string | null> {
  try {
    return await deps.store.recordDirect(event, outcome);
  } catch (error) {
    log.error(
      "could not record direct delivery for {subscription} yet: {reason}; it is held and " +
        "written once the state database takes writes again",
      { subscription: event.subscription, reason: (error as Error).message },
    );
    deps.heldDirect?.hold(event, outcome, deps.now());
    return null;
  }
}
