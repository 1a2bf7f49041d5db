/**
 * What a failed attempt means (docs/durability.md): a dead letter when the error is permanent or the
 * attempts that count are used up, else a retry with backoff.
 *
 * @module
 */
import { retryDelayMs } from "./retry.ts";
import { AgentError, ConfigError, NotFoundError, TargetError } from "../errors.ts";
import { type AttemptInProgress, describe, type WorkerCore } from "./_core.ts";

/**
 * What a failed attempt means: a dead letter when the error is permanent or the attempts that
 * count are used up, else a retry with backoff. An attempt that delivered part of the message
 * before failing (a long answer meeting a chat's rate limit) does not count: it moved the
 * delivery on, and there are only as many such attempts as parts.
 * @param worker the worker the attempt is of
 * @param failure `attempt`: the attempt that failed, at the step it failed; `error`: what it
 *   threw; `progressed`: whether it delivered parts before failing
 * @throws whatever the store throws but `StoreUnavailableError` (the outcome is then held) and
 *   `ConflictError` (the lease was lost: the outcome is dropped)
 */
export async function decide(
  worker: WorkerCore,
  failure: { attempt: AttemptInProgress; error: unknown; progressed: boolean },
): Promise<void> {
  const { deps: { store, log }, retry } = worker;
  const { attempt: { event, context, step, writeRefused }, error, progressed } = failure;
  const message = describe(error);
  const nowMs = worker.deps.now();
  const permanent = isPermanent(error);
  const counted = event.attempts - event.uncountedAttempts;
  if (error instanceof AgentError && error.unavailable) {
    worker.pause.agentFailed(event.id, error.retryAfterSeconds);
  }
  if (permanent || (counted >= retry.maxAttempts && !progressed)) {
    const written = await worker.outcomes.record(event.id, async () => {
      await writeRefused();
      await store.markFailed(event.id, { error: message, step, nowMs });
    });
    // Lost to another gateway, which runs the event again: not this run's failure to count.
    if (written === "dropped") return;
    const reason = permanent ? "permanent error" : `${counted} attempts`;
    log("error", "failed", { ...context, step, reason, error: message });
    worker.deps.metrics?.event(event.subscription, "failed");
    return;
  }
  const retryAfterSeconds = error instanceof AgentError || error instanceof TargetError
    ? error.retryAfterSeconds
    : undefined;
  const delayMs = retryDelayMs(counted, {
    ...retry,
    random: worker.deps.random,
    retryAfterSeconds,
  });
  const written = await worker.outcomes.record(event.id, async () => {
    await writeRefused();
    await store.markRetry(event.id, {
      error: message,
      step,
      nextAttemptAtMs: nowMs + delayMs,
      nowMs,
    });
  });
  if (written === "dropped") return;
  log("warn", "retry scheduled", {
    ...context,
    step,
    delayMs,
    error: message,
    ...(progressed ? { counted: false } : {}),
  });
}

/**
 * Retrying cannot fix a permanent target/agent error, a missing skill or a broken SKILL.md.
 * @param error what an attempt threw
 * @returns true for a permanent {@link AgentError} or {@link TargetError}, a
 *   {@link NotFoundError} or a {@link ConfigError}
 */
export function isPermanent(error: unknown): boolean {
  if (error instanceof AgentError || error instanceof TargetError) return error.permanent;
  return error instanceof NotFoundError || error instanceof ConfigError;
}
