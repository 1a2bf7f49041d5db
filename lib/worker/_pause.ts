/**
 * The worker's pause of new agent runs after the agent failed runs of several events whatever
 * their prompt (`AgentError.unavailable`: the LLM endpoint unreachable, or answering 429 or 5xx;
 * the `command` agent exiting with a failure or printing nothing): while it lasts, only events
 * whose next step is a delivery start. A run that succeeds ends it.
 *
 * @module
 */

/** How long no new agent run starts after the agent failed runs, in ms (see Retry-After). */
export const AGENT_FAILURE_PAUSE_MS = 1000;

/** The longest such pause, whatever `Retry-After` the endpoint sent, in ms. */
export const MAX_PAUSE_MS = 10_000;

/** Events the agent failed, with no success since, that begin a pause. */
export const UNAVAILABLE_BEFORE_PAUSE = 2;

/** One worker's pause of new agent runs. */
export interface RunPause {
  /**
   * Counts an event whose run the agent failed; the {@link UNAVAILABLE_BEFORE_PAUSE}th with
   * no success between pauses new runs.
   * @param eventId the event whose run failed (one event's own retries count once)
   * @param retryAfterSeconds what the endpoint's `Retry-After` asked, in seconds, if it did
   */
  agentFailed(eventId: string, retryAfterSeconds: number | undefined): void;
  /** A run succeeded: the agent answers again, so the pause and the failures count end. */
  agentAnswered(): void;
  /**
   * What is left of the pause, in ms (0 when none). More left than the pause was long means the
   * clock was set back: the pause is dropped, rather than holding every event until the clock
   * catches up.
   * @returns milliseconds, 0 when no pause holds new runs back
   */
  leftMs(): number;
}

/**
 * Creates the pause of one worker, none at first.
 * @param now the worker's clock, in ms since the epoch
 * @param retry `initialDelayMs`: the first retry delay, in ms, whose half bounds the pause
 * @returns the pause
 */
export function createRunPause(now: () => number, retry: { initialDelayMs: number }): RunPause {
  /** No new agent run starts before this time (ms since the epoch): see {@link pauseNewRuns}. */
  let pausedUntilMs = 0;
  /** How long that pause was when it was set, in ms. */
  let pauseLengthMs = 0;
  /** Events whose run the agent failed (`AgentError.unavailable`) since the last success. */
  const failedByAgent = new Set<string>();
  const longestPauseMs = Math.min(MAX_PAUSE_MS, retry.initialDelayMs / 2);

  /**
   * The agent failed runs whatever their prompt (`AgentError.unavailable`: the LLM endpoint
   * unreachable, 429 or 5xx; the `command` agent's failed exit or empty output) for
   * {@link UNAVAILABLE_BEFORE_PAUSE} events with no success between: the events queued behind
   * them would fail the same way, so no new agent run starts for a while, instead of one run
   * after another failing at once. Events whose next step is a delivery (direct messages,
   * answers already saved) still start. During an outage the worker then tries the agent about
   * once a second per slot, so failing runs do not take the CPU from the ingest path. Events
   * wait in the queue meanwhile, their attempts unspent, and a run that succeeds ends the pause.
   * It lasts 1 s, or what the endpoint's `Retry-After` asks, and at most {@link MAX_PAUSE_MS} or
   * half the first retry delay (so no event's own retry waits for it beyond its jitter).
   * Failures that may be the prompt's own (a 429 for a request too large, say) pause nothing
   * while other runs succeed between them.
   */
  function pauseNewRuns(retryAfterSeconds: number | undefined): void {
    const pauseMs = Math.min(
      longestPauseMs,
      Math.max(AGENT_FAILURE_PAUSE_MS, (retryAfterSeconds ?? 0) * 1000),
    );
    const untilMs = now() + pauseMs;
    if (untilMs >= pausedUntilMs) [pausedUntilMs, pauseLengthMs] = [untilMs, pauseMs];
  }

  function pauseLeftMs(): number {
    const left = pausedUntilMs - now();
    if (left <= 0) return 0;
    if (left > pauseLengthMs) {
      pausedUntilMs = 0;
      return 0;
    }
    return left;
  }

  return {
    agentFailed(eventId, retryAfterSeconds) {
      // Counted per event: one event's own retries do not make an outage.
      failedByAgent.add(eventId);
      if (failedByAgent.size >= UNAVAILABLE_BEFORE_PAUSE) pauseNewRuns(retryAfterSeconds);
    },
    agentAnswered() {
      pausedUntilMs = 0;
      failedByAgent.clear();
    },
    leftMs: pauseLeftMs,
  };
}
