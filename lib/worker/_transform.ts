/**
 * The transform step of an attempt (docs/subscriptions.md#transforms): an event whose
 * transform failed at ingest, or that a replay runs again, gets it run here, before its agent
 * run or its delivery, in the same attempt. A failure fails the attempt, which is retried as a
 * failed agent run is (`_decide.ts`); a skip ends the event without delivery.
 *
 * @module
 */
import { storableText } from "../state/mod.ts";
import { promptFrom, runTransform, SKIPPED_JSON, transformPending } from "../transforms/mod.ts";
import type { AttemptInProgress, WorkerCore } from "./_core.ts";

/**
 * Runs the attempt's transform if it is pending, and saves what it printed and the prompt
 * rendered from it on the event (and on `attempt.event`, which the rest of the attempt reads).
 * @param worker the worker making the attempt
 * @param attempt the attempt in progress
 * @returns true when the transform skipped the event: nothing is to be delivered; false when
 *   the attempt goes on (no transform pending, or it gave the JSON to render from)
 * @throws TransformError when the transform fails: the attempt fails, at the step `agent` for
 *   an agent-mode event; one the gateway's stop killed is requeued by `runEvent`, in either
 *   mode, as a stopped agent run is
 */
export async function transformStep(
  worker: WorkerCore,
  attempt: AttemptInProgress,
): Promise<boolean> {
  const { event, context } = attempt;
  if (!transformPending(event)) return false;
  const { deps } = worker;
  const transform = event.route.transform!;
  if (event.mode === "agent") attempt.step = "agent";
  const startedAt = deps.now();
  const result = await runTransform(transform, event.payload, {
    signal: worker.stopRuns.signal,
  });
  if (result.skip) {
    event.transformed = SKIPPED_JSON;
    // Lost if the store refuses it now: the event still ends delivered, with nothing sent.
    await worker.outcomes.writeNow(() =>
      deps.store.saveTransformed(event.id, SKIPPED_JSON, event.prompt)
    );
    return true;
  }
  const prompt = storableText(promptFrom(transform.prompt, result, {
    event: event.eventLabel,
    subscription: event.subscription,
    deliveryId: event.deliveryId,
  }));
  event.prompt = prompt;
  event.transformed = result.json;
  // Refused now, it runs again on the next attempt, if one is needed.
  await worker.outcomes.writeNow(() => deps.store.saveTransformed(event.id, result.json, prompt));
  deps.log("info", "transform ok", { ...context, ms: deps.now() - startedAt });
  return false;
}
