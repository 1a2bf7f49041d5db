/**
 * What a delivery is handed and what it leaves behind: the job built from an event (stored, or
 * a direct message about to be sent) and the receipt the store keeps of each part sent.
 *
 * @module
 */
import type { NewEvent, PartReceipt, StoredEvent } from "../state/mod.ts";
import { type DeliveryJob, messageFormat, type SentPart } from "../targets/mod.ts";

/**
 * What the store records of a part that went out.
 * @param sent what `deliver()` reported of it
 * @param at its number and the message's parts, and when it went out (ms since the epoch)
 */
export function partReceipt(
  sent: SentPart,
  at: { part: number; parts: number; sentAtMs: number },
): PartReceipt {
  return {
    ...at,
    target: sent.target,
    chat: sent.destination,
    messageId: sent.messageId ?? null,
    url: sent.url ?? null,
  };
}

/**
 * What to deliver where, for a stored event or a direct message about to be sent.
 * @param event the event; a stored one resumes after its `partsSent`
 * @param text the message: the agent's answer, or the rendered template
 * @param payload the parsed body, for targets that read it (@default {`event.payload` parsed,
 *   or the text as stored when it is not JSON})
 */
export function jobFor(
  event: NewEvent | StoredEvent,
  text: string,
  payload?: unknown,
): DeliveryJob {
  if (payload === undefined) {
    payload = event.payload;
    try {
      payload = JSON.parse(event.payload);
    } catch { /* stored as received: deliver the text */ }
  }
  const stored = "id" in event ? event : undefined;
  return {
    target: event.route.deliver,
    chatId: event.route.chatId,
    text,
    format: messageFormat(event.mode, event.route.format),
    payload,
    source: event.source,
    subscription: event.subscription,
    eventLabel: event.eventLabel,
    eventId: stored?.id ?? "",
    deliveryId: event.deliveryId,
    partsAlreadySent: stored?.partsSent ?? 0,
  };
}
