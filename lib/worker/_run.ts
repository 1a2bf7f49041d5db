/**
 * One attempt at one event. When it has no saved response (agent mode), the agent runs with the
 * system prompt of the event's skills and its answer is saved at once (or, if the database
 * refuses it for a moment, with the attempt's outcome), so a delivery retry does not run the
 * agent again; then the answer (or, for a replayed direct-mode event, the message itself) is
 * delivered, resuming after the parts already sent.
 *
 * @module
 */
import { setImmediate } from "node:timers";
import { TargetError } from "../errors.ts";
import { type AgentAnswer, DEFAULT_SILENT_MARKER } from "../agents/mod.ts";
import { type AgentRun, needsAgentRun, type StateStore, type StoredEvent } from "../state/mod.ts";
import type { AttemptInProgress, WorkerCore } from "./_core.ts";
import { decide, isPermanent } from "./_decide.ts";
import { conversationFor } from "./_conversation.ts";
import { deliveryKey } from "./_direct.ts";
import { runPrompt } from "./_coalesce.ts";
import { transformStep } from "./_transform.ts";
import { jobFor, partReceipt } from "./_job.ts";

/**
 * Makes one attempt at an event and records its outcome: delivered, retried later, failed, or
 * back in the queue when `stop()` ended its agent run.
 * @param worker the worker that claimed the event
 * @param event the event, claimed (its attempt counted)
 * @returns once the outcome is recorded or held
 * @throws whatever the store throws but `StoreUnavailableError`
 */
export async function runEvent(worker: WorkerCore, event: StoredEvent): Promise<void> {
  const { store, log } = worker.deps;
  // A macrotask boundary per event: a backlog of events that fail without I/O (a missing
  // API key) must not starve the HTTP server or block a graceful stop.
  await new Promise((resolve) => setImmediate(resolve));
  if (event.attempts - event.uncountedAttempts > worker.retry.maxAttempts) {
    return failUsedUp(worker, event);
  }
  const attempt = createAttempt(store, event);
  let silent = false;
  let skipped = false;
  let transforming = true;
  try {
    // A transform that skips the event leaves nothing to deliver.
    skipped = await transformStep(worker, attempt);
    transforming = false;
    const answer = skipped ? { text: "", silent: true } : await answerFor(worker, attempt);
    if (answer === null) return;
    silent = answer.silent;
    // A silent answer is kept on its attempt and goes nowhere: the event ends delivered with no
    // part, which is how its lineage tells that the agent chose silence.
    if (!silent) await deliverAnswer(worker, { attempt, text: answer.text });
  } catch (error) {
    // A permanent error (a missing skill) still fails the event, stop or not. A transform the
    // stop killed is requeued in direct mode too, where the step is still `delivery`.
    const stoppable = attempt.step === "agent" || transforming;
    if (worker.stopRuns.signal.aborted && stoppable && !isPermanent(error)) {
      return requeueStopped(worker, attempt);
    }
    const progressed = attempt.partsDelivered > event.partsSent;
    await decide(worker, { attempt, error, progressed });
    return;
  }
  const nowMs = worker.deps.now();
  const written = await worker.outcomes.record(event.id, async () => {
    await attempt.writeRefused();
    await store.markDelivered(event.id, nowMs);
  });
  // Another gateway claimed the event when this one's lease ended: its run is the one on record.
  if (written === "dropped") return;
  if (skipped) log("info", "delivered nothing: the transform skipped it", attempt.context);
  else if (silent) log("info", "delivered nothing: the agent chose silence", attempt.context);
  else log("info", "delivered", { ...attempt.context, target: event.route.deliver });
  worker.deps.metrics?.event(event.subscription, "delivered");
}

/** A new attempt at `event`, at its delivery step, with nothing refused yet. */
function createAttempt(store: StateStore, event: StoredEvent): AttemptInProgress {
  const attempt: AttemptInProgress = {
    event,
    context: { event_id: event.id, subscription: event.subscription, attempt: event.attempts },
    step: "delivery",
    partsDelivered: event.partsSent,
    responseNotRecorded: undefined,
    partsNotRecorded: undefined,
    async writeRefused() {
      const response = attempt.responseNotRecorded;
      if (response !== undefined) {
        await store.saveResponse(event.id, response.text, response.run, response.prompt);
        // Only what was written: a newer value set meanwhile is written by the next call.
        if (attempt.responseNotRecorded === response) attempt.responseNotRecorded = undefined;
      }
      const sentParts = attempt.partsNotRecorded;
      if (sentParts !== undefined) {
        const { sent, parts, receipts } = sentParts;
        await store.savePartsSent(event.id, sent, { sentBefore: event.partsSent, parts, receipts });
        if (attempt.partsNotRecorded === sentParts) attempt.partsNotRecorded = undefined;
      }
    },
  };
  return attempt;
}

/**
 * An event whose attempts are used up, the last one interrupted: a dead letter.
 */
async function failUsedUp(worker: WorkerCore, event: StoredEvent): Promise<void> {
  const { store, log } = worker.deps;
  // Attempts interrupted by crashes count too: an event that takes the process down every
  // time it runs ends as a dead letter instead of crashing it for ever.
  // Earlier attempts may have failed otherwise: their own errors stay on their attempts.
  const error = `not run again: its ${
    event.attempts - event.uncountedAttempts - 1
  } attempts are used up, the last one interrupted (a crash, or a stop it outlived)`;
  const nowMs = worker.deps.now();
  const written = await worker.outcomes.record(
    event.id,
    () => store.markFailed(event.id, { error, step: "agent", nowMs }),
  );
  if (written === "dropped") return;
  log("error", "failed", { event_id: event.id, subscription: event.subscription, error });
  worker.deps.metrics?.event(event.subscription, "failed");
}

/**
 * The text to deliver: the saved answer or the message itself, or the agent's answer, run now.
 * @returns the text, and whether the agent chose silence (then nothing is delivered); null
 *   when `stop()` came before the run began (the event is then back in the queue)
 */
async function answerFor(
  worker: WorkerCore,
  attempt: AttemptInProgress,
): Promise<{ text: string; silent: boolean } | null> {
  const { deps } = worker;
  const { event, context } = attempt;
  if (!needsAgentRun(event)) {
    const saved = event.mode === "agent" && event.response !== null;
    // A silent answer saved by an attempt whose outcome was lost is still silence, not text.
    const silent = saved &&
      event.response!.trim() === (deps.silentMarker ?? DEFAULT_SILENT_MARKER);
    return { text: saved ? event.response! : event.prompt, silent };
  }
  attempt.step = "agent";
  const startedAt = deps.now();
  const systemPrompt = await deps.systemPrompt(event.route.skills);
  // Only the options the route sets: the others leave agent.* in force.
  const { systemPrompt: routeSystemPrompt, ...sampling } = event.route.agent ?? {};
  if (worker.stopRuns.signal.aborted) {
    // Stopped before the run began: the next start runs it.
    await requeueStopped(worker, attempt);
    return null;
  }
  const conversation = await conversationFor(worker, event);
  const prompt = await runPrompt(deps.store, event);
  const runStartedAt = deps.now();
  const answer = await deps.runAgent({
    prompt,
    systemPrompt,
    ...(routeSystemPrompt === undefined ? {} : { routeSystemPrompt }),
    ...sampling,
    eventId: event.id,
    ...(conversation === undefined ? {} : { conversation }),
    signal: worker.stopRuns.signal,
  });
  const run = agentRun(answer, deps.now() - runStartedAt);
  if (answer.usage) deps.metrics?.llmTokens(event.subscription, answer.usage);
  // The answer is kept even when the store refuses it now: it is delivered, and written
  // with the outcome, instead of failing the attempt and running the agent again.
  // With the prompt it was given: the turn of its conversation keeps both.
  attempt.responseNotRecorded = { text: answer.text, run, prompt };
  // Kept for the outcome's write while the store rests, or if it refuses now. A silent answer
  // is written only with the outcome: saved alone, a retry would deliver it as text.
  if (!answer.silent) await worker.outcomes.writeNow(attempt.writeRefused);
  // The agent answers again.
  worker.pause.agentAnswered();
  deps.log("info", "agent run ok", {
    ...context,
    ms: deps.now() - startedAt,
    chars: answer.text.length,
    ...(run.model === null ? {} : { model: run.model }),
    ...(run.promptTokens === null ? {} : { prompt_tokens: run.promptTokens }),
    ...(run.completionTokens === null ? {} : { completion_tokens: run.completionTokens }),
  });
  attempt.step = "delivery";
  return { text: answer.text, silent: answer.silent ?? false };
}

/**
 * The run as the store records it on its attempt.
 * @param answer what the runner answered
 * @param durationMs how long the run took, in ms
 */
function agentRun(answer: AgentAnswer, durationMs: number): AgentRun {
  return {
    provider: answer.provider,
    model: answer.model ?? null,
    promptTokens: answer.usage?.promptTokens ?? null,
    completionTokens: answer.usage?.completionTokens ?? null,
    durationMs,
  };
}

/** Delivers `text`, saving the parts sent as they go out. */
async function deliverAnswer(
  worker: WorkerCore,
  { attempt, text }: { attempt: AttemptInProgress; text: string },
): Promise<void> {
  const { event } = attempt;
  let job = jobFor(event, text);
  if (event.mode === "direct" && event.dedupe) {
    await refuseIfSentMeanwhile(worker, event);
    // The sender's own retries may have got more parts out since the replay was queued.
    job = { ...job, partsAlreadySent: await worker.deps.store.resumeAfter(event) };
  }
  await worker.deps.deliver(job, async (partsSent, parts, sent) => {
    // The part went out: a failing store must not turn that into a failed delivery.
    attempt.partsDelivered = partsSent;
    const receipt = partReceipt(sent, { part: partsSent, parts, sentAtMs: worker.deps.now() });
    // Receipts the store refused before are written with this one.
    const receipts = [...(attempt.partsNotRecorded?.receipts ?? []), receipt];
    attempt.partsNotRecorded = { sent: partsSent, parts, receipts };
    // Awaited before the next part goes out; a lost lease (ConflictError) ends the delivery.
    await worker.outcomes.writeNow(attempt.writeRefused);
  });
}

/**
 * A replayed direct message that the sender's own retry is sending right now (tried again
 * later), or delivered while the replay waited (its delivery id is another event's now: the
 * replay fails). Sending it too would deliver it twice.
 * @throws TargetError retryable while the retry is being sent, else permanent, naming the
 *   event that delivered it
 */
async function refuseIfSentMeanwhile(worker: WorkerCore, event: StoredEvent): Promise<void> {
  const { deps } = worker;
  // Being sent, or delivered with its record held: a replay waits for the record, then finds
  // that the message went out.
  const key = deliveryKey(event.subscription, event.deliveryId);
  if (
    worker.directInFlight.has(key) ||
    worker.outcomes.delivered(key, deps.now(), worker.idempotencyTtlMs)
  ) {
    throw new TargetError(
      `not sent yet: a request with delivery id ${event.deliveryId} is being sent now`,
      { retryAfterSeconds: 5 },
    );
  }
  const holder = await deps.store.keyHolder(event.subscription, event.deliveryId, deps.now());
  if (holder === null || holder === event.id) return;
  throw new TargetError(
    `not sent: a request with delivery id ${event.deliveryId} (the original or the sender's ` +
      `retry) was delivered meanwhile, as event ${holder}; agent webhook replay ${holder} ` +
      "sends it again",
    { permanent: true },
  );
}

/**
 * An agent run that stop() ended: the event goes back to the queue, due now, with the attempt
 * closed as interrupted (it does not count: the stop was not the event's doing, and a
 * restart must not use up the attempts of events it caught), so the next start runs it and, until
 * then, `events` shows it queued and `replay` accepts it. A write the store refuses is held
 * like an outcome and tried once more before the stop ends; if that fails too, the event
 * stays `running` and the next start resumes it all the same.
 */
async function requeueStopped(
  worker: WorkerCore,
  { event, context }: AttemptInProgress,
): Promise<void> {
  const { deps } = worker;
  deps.log("warn", "agent run stopped by shutdown", context);
  await worker.outcomes.record(
    event.id,
    () => deps.store.recoverInterrupted(deps.now(), event.id),
  );
}
