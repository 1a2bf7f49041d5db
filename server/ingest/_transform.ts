/**
 * The "transform" step of `POST /webhooks/<name>` (docs/subscriptions.md#transforms), after the
 * filters, for a route that has a transform: the program's JSON becomes what the prompt (or
 * direct message) is rendered from, or it skips the event. A transform that fails here does
 * not lose the event: it is accepted with its transform pending, and the worker runs the
 * transform again with the event's attempts.
 *
 * @module
 */
import { lineTemplate, writeLine } from "../../lib/log.ts";
import { type NewEvent, storableText } from "../../lib/state/mod.ts";
import { promptFrom, runTransform, TransformError } from "../../lib/transforms/mod.ts";
import type { TransformSlots } from "../../lib/transforms/slots.ts";
import { log } from "./_answers.ts";

/**
 * The longest a transform may hold a request, in seconds: senders wait about 10 s for an answer
 * (GitHub), then give up and count a failed delivery. A transform given longer is cut here
 * and left to the worker, which runs it with its whole time limit.
 */
export const MAX_INGEST_TRANSFORM_SECONDS = 5;

const SKIPPED = lineTemplate("ignored {subscription}: event {event} skipped by its transform");
const BUSY_ERROR = "as many transforms as the listener runs at once are running";
const PENDING = lineTemplate(
  "transform of {subscription} failed on event {event}, accepted for the worker to retry: " +
    "{error}",
);

/** What the listener's transforms share: the gateway's stop, and the places to run them. */
export interface IngestTransforms {
  /** Aborts when the gateway begins to stop: the programs running are killed. */
  signal?: AbortSignal;
  /** Places for transforms at once; without them, no bound. */
  slots?: TransformSlots;
}

/**
 * Runs the event's transform, if its route has one.
 * @param event the event as built from the request, its snapshot holding the transform
 * @param shared the gateway's stop signal and the places for transforms at once
 * @returns `skip` when the transform skipped it; else the event to dispatch: with the
 *   transformed JSON and the prompt rendered from it, or, when the transform failed, was
 *   stopped or found no free place (each logged), with its transform pending and not coalesced
 * @throws what the transform throws but a `TransformError` (an unexpected error)
 */
export async function transformed(
  event: NewEvent,
  shared: IngestTransforms = {},
): Promise<NewEvent | "skip"> {
  const transform = event.route.transform;
  if (transform === undefined) return event;
  const subscription = event.subscription;
  if (shared.slots?.take() === false) return pending(event, BUSY_ERROR);
  let result;
  try {
    result = await runTransform(
      {
        command: transform.command,
        timeoutSeconds: Math.min(transform.timeoutSeconds, MAX_INGEST_TRANSFORM_SECONDS),
      },
      event.payload,
      { signal: shared.signal },
    );
  } catch (error) {
    if (!(error instanceof TransformError)) throw error;
    return pending(event, error.message);
  } finally {
    shared.slots?.release();
  }
  if (result.skip) {
    writeLine(log, "info", SKIPPED, { subscription, event: event.eventLabel });
    return "skip";
  }
  const context = { event: event.eventLabel, subscription, deliveryId: event.deliveryId };
  return {
    ...event,
    transformed: result.json,
    prompt: storableText(promptFrom(transform.prompt, result, context)),
  };
}

/** The event with its transform left to the worker, logged with `error`. */
function pending(event: NewEvent, error: string): NewEvent {
  const fields = { subscription: event.subscription, event: event.eventLabel, error };
  writeLine(log, "warning", PENDING, { ...fields, delivery_id: event.deliveryId });
  // It has no prompt until its transform runs again: it runs alone, folded into no burst
  // (docs/subscriptions.md#coalescing).
  const { coalesce: _, ...route } = event.route;
  return { ...event, route };
}

/**
 * Whether an event's transform is still to run: its route has one, and it has no transformed
 * JSON (it failed at ingest).
 */
export function pendingTransform(event: NewEvent): boolean {
  return event.route.transform !== undefined && event.transformed === undefined;
}
