/**
 * What `agent webhook test --wait` does once the gateway took the test event: it reads the
 * event in the state database until it is delivered or failed, or the wait is over, saying
 * each failed attempt as it sees it, then prints the outcome: the agent run, the parts
 * delivered with their message ids, or the error (docs/commands.md).
 *
 * @module
 */
import { oneTerminalLine } from "../lib/log.ts";
import type { Lineage, StateStore } from "../lib/state/mod.ts";
import { cut, duration } from "./_event_listing.ts";

/** How often the state database is read while waiting, in ms. */
export const OUTCOME_POLL_MS = 250;

/** What {@link waitForOutcome} needs. */
export interface OutcomeWait {
  /** The longest wait, in ms. */
  waitMs: number;
  /** Clock, in ms since the epoch. */
  now: () => number;
  /** Waits `ms`. */
  sleep: (ms: number) => Promise<void>;
  /** Prints one line (or several). */
  print: (text: string) => void;
}

/**
 * Waits for an event's outcome and prints it.
 * @param store the state store of the gateway's home
 * @param eventId the id the gateway's answer named
 * @param wait how long, the clock, the sleep and where to print (see {@link OutcomeWait})
 * @returns the exit code: 0 once delivered, 1 when it failed, is not in this home's database,
 *   or has no outcome within the wait
 * @throws StoreUnavailableError when the database cannot be read
 */
export async function waitForOutcome(
  store: Pick<StateStore, "lineage">,
  eventId: string,
  wait: OutcomeWait,
): Promise<number> {
  const deadline = wait.now() + wait.waitMs;
  const show = `Its whole story: agent webhook show ${eventId}`;
  let failuresSaid = 0;
  for (;;) {
    const lineage = await store.lineage(eventId);
    if (lineage === null) {
      wait.print(
        `The gateway named event ${eventId}, which is not in this home's state database: is ` +
          "the gateway running with another home folder (AGENT_HOME)?",
      );
      return 1;
    }
    const { status } = lineage.event;
    const failed = lineage.attempts.filter((attempt) => attempt.error !== null);
    // The last failure of a failed event is its outcome, said below.
    const toSay = failed.slice(failuresSaid, status === "failed" ? -1 : undefined);
    for (const attempt of toSay) {
      wait.print(
        `Attempt ${attempt.attempt} failed at ${attempt.step}: ${errorText(attempt.error)}`,
      );
    }
    failuresSaid = failed.length;
    if (status === "delivered" || status === "failed") {
      wait.print([...outcomeLines(lineage), show].join("\n"));
      return status === "delivered" ? 0 : 1;
    }
    const leftMs = deadline - wait.now();
    if (leftMs <= 0) {
      const retry = status === "queued" && lineage.event.attempts > 0 ? ", to be retried" : "";
      wait.print(
        `No outcome within ${wait.waitMs / 1000} s: the event is ${status}${retry}. ` +
          `agent webhook events --follow prints it when it comes.\n${show}`,
      );
      return 1;
    }
    await wait.sleep(Math.min(OUTCOME_POLL_MS, leftMs));
  }
}

/** `Delivered in 2.1 s`, the agent run, and each part; or `Failed after 3 attempts: ...`. */
function outcomeLines({ event, attempts, parts }: Lineage): string[] {
  const took = duration(event.updatedAtMs - (event.replayedAtMs ?? event.receivedAtMs));
  const tries = `${event.attempts} ${event.attempts === 1 ? "attempt" : "attempts"}`;
  if (event.status === "failed") {
    return [`Failed after ${tries}, ${took}: ${errorText(event.lastError)}`];
  }
  const lines = [`Delivered in ${took}, after ${tries}.`];
  // What the subscription's transform made of the payload (docs/subscriptions.md#transforms).
  if (event.transformed !== undefined) lines.push(`  transformed: ${errorText(event.transformed)}`);
  const run = attempts.findLast((attempt) => attempt.run !== null)?.run;
  if (run) {
    const tokens = run.promptTokens === null
      ? "no token counts reported"
      : `${run.promptTokens} prompt + ${run.completionTokens} completion tokens`;
    const model = run.model === null ? "" : ` ${oneTerminalLine(run.model)}`;
    lines.push(`  agent: ${run.provider}${model}, ${tokens}, ${duration(run.durationMs)}`);
  }
  for (const part of parts.filter((part) => part.sentAtMs >= (event.replayedAtMs ?? 0))) {
    const id = part.messageId === null ? "" : `, message ${oneTerminalLine(part.messageId)}`;
    const url = part.url === null ? "" : ` (${oneTerminalLine(part.url)})`;
    lines.push(
      `  part ${part.part}/${part.parts}: ${part.target} ${oneTerminalLine(part.chat)}${id}${url}`,
    );
  }
  return lines;
}

/** An error as one line of at most 300 characters. */
function errorText(error: string | null): string {
  return cut(oneTerminalLine(error ?? "unknown error").replace(/\s+/g, " "), 300);
}
