/**
 * Direct delivery's answers (docs/http.md): the worker sends the rendered template while the
 * sender waits (`EventWorker.deliverNow`), and this turns what became of it into the answer
 * and the log line: 200 when the target took it, 502 when it did not, 409 while the same
 * delivery id is being sent.
 *
 * @module
 */
import type { NewEvent } from "../../lib/state/mod.ts";
import { answer, delivered, duplicate, eventFields, type EventNames, log } from "./_answers.ts";
import { refusalFor } from "./_refusal.ts";
import type { IngestDeps } from "./mod.ts";

/**
 * Sends a direct-delivery message and answers its sender. The delivery id is only recorded
 * after success, so the sender's retry of a 502 goes through, resuming after the parts of a
 * split message that went out. A 502 caused by a platform's rate limit carries its wait as
 * `Retry-After` (seconds).
 * @param deps the pipeline's collaborators: `deliverNow`
 * @param event the verified, rendered event, as it would be stored
 * @param payload the parsed JSON body, for targets that read it (a forge comment's issue)
 * @param names how the answer names the event: its type, action and the filter's match
 * @returns 200 `{"status":"delivered",…,"target":…}`, a duplicate's answer when the delivery id
 *   was already delivered, or 502 `{"status":"error","error":"delivery failed",…}`
 * @throws Refusal 409 with `Retry-After` while an earlier request or a replay is sending the
 *   same delivery id; StoreUnavailableError when the store cannot be read (answered 503)
 */
export async function deliverNow(
  deps: IngestDeps,
  { event, payload, names }: { event: NewEvent; payload: unknown; names: EventNames },
): Promise<Response> {
  const { subscription, eventLabel, deliveryId } = event;
  const result = await deps.deliverNow(event, payload);
  // The log lines name the event by its label, as every other ingest line does.
  const base = { subscription, event: eventLabel, delivery_id: deliveryId };
  switch (result.status) {
    case "duplicate":
      deps.metrics?.event(subscription, "duplicate");
      return duplicate(subscription, eventLabel, deliveryId);
    case "busy": {
      const headers = { "retry-after": String(result.retryAfterSeconds) };
      throw refusalFor(subscription, { status: 409, error: result.error, headers });
    }
    case "delivered": {
      const { target, parts, eventId } = result;
      deps.metrics?.event(subscription, "delivered");
      log.info("delivered {subscription} {event} to {target}", {
        ...base,
        target,
        parts,
        event_id: eventId,
      });
      return delivered({ subscription, names, target, deliveryId, eventId });
    }
    case "failed": {
      deps.metrics?.event(subscription, "failed");
      log.error("failed {subscription} {event} to {target}: {reason}", {
        ...base,
        status: 502,
        target: event.route.deliver,
        reason: result.error,
        parts_sent: result.partsSent,
        event_id: result.eventId,
      });
      // A platform's rate limit is passed on: the sender's retry waits as long as it asked.
      const seconds = result.retryAfterSeconds;
      const headers: Record<string, string> = seconds === undefined
        ? {}
        : { "retry-after": String(Math.ceil(seconds)) };
      return answer(502, {
        status: "error",
        error: "delivery failed",
        subscription,
        ...eventFields(names),
        delivery_id: deliveryId,
      }, headers);
    }
  }
}
