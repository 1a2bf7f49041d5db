// deno-lint-ignore-file require-await -- async by StateStore's contract, synchronous inside
/**
 * Replaying an event (`webhook replay`): a new series of attempts, with the route as it is now,
 * and for a direct message its delivery id's key and the parts already sent, so that the
 * message is neither sent twice nor cut short.
 *
 * @module
 */
import { ConflictError } from "../../errors.ts";
import { replayEvent } from "./_maintenance.ts";
import { resumeAfter } from "./_store_accept.ts";
import type { Row, StoreCore } from "./_store_core.ts";
import { type StateStore, storableText, type StoredEvent } from "../mod.ts";

/**
 * The store's `replay`.
 * @param core the store
 * @returns the method, as {@link StateStore.replay} documents it
 */
export function replayOp(core: StoreCore): StateStore["replay"] {
  const { s, use } = core;
  return async (eventId, nowMs, redispatch) =>
    use(() => {
      const event = core.mustFind(eventId);
      refuseSuperseded(core, event);
      let replayed = event;
      core.transaction(() => {
        const dispatch = redispatch?.(event);
        replayed = replayEvent(
          core.db,
          event,
          nowMs,
          dispatch && { ...dispatch, prompt: storableText(dispatch.prompt) },
        );
        if (replayed.mode !== "direct" || !replayed.dedupe) return;
        // A direct message to send again takes its delivery id now, not once delivered: the
        // sender's retry meanwhile is then told to wait (409), instead of sending a copy.
        core.takeKey(replayed, nowMs);
        const resume = resumeAfter(core, replayed);
        if (resume > replayed.partsSent) {
          s.setPartsSent.run(resume, nowMs, replayed.id);
          replayed = { ...replayed, partsSent: resume };
        }
      });
      return replayed;
    });
}

/**
 * Refuses to replay a failed direct message whose delivery id a later event holds, expired
 * or not: the sender's own retry delivered it (or is being sent), so a replay would send it
 * twice.
 * @throws ConflictError naming that event
 */
function refuseSuperseded(core: StoreCore, event: StoredEvent): void {
  if (event.mode !== "direct" || event.status === "delivered" || !event.dedupe) return;
  const holder = core.s.keyHolder.get(event.subscription, event.deliveryId) as Row | undefined;
  if (holder === undefined || String(holder.id) === event.id) return;
  const other = core.findEvent(String(holder.id));
  // An older message that reused the delivery id past its key's life is not this one's retry.
  if (other !== null && other.receivedAtMs <= event.receivedAtMs) return;
  throw new ConflictError(
    `Not replayed: the sender retried delivery ${event.deliveryId} after ${event.id} failed, ` +
      `and that retry is event ${holder.id} (${other?.status ?? "unknown"}); replaying ` +
      `${event.id} would send the message twice. To send it once more anyway: ` +
      `agent webhook replay ${holder.id}`,
  );
}
