/**
 * Helpers for target tests: a delivery context with real `fetch` and a recording `sleep` and
 * `log`, a job builder, a loopback server scripted to answer one way, and GitHub example
 * payloads from `@octokit/webhooks-examples`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { TargetError } from "../../../lib/errors.ts";
import type { DeliveryJob, TargetContext } from "../../../lib/targets/mod.ts";

export { githubExample } from "../../fakes/github_examples.ts";

/** A {@link TargetContext} that records its waits (ms) and log lines instead of acting. */
export interface RecordingContext extends TargetContext {
  waits: number[];
  logs: { message: string; properties: Record<string, unknown> }[];
}

/** A context over real `fetch` whose `sleep` returns at once and records the wait. */
export function recordingContext(
  env: Record<string, string | undefined>,
  options: { homeTarget?: string; maxRateLimitWaitMs?: number } = {},
): RecordingContext {
  const waits: number[] = [];
  const logs: RecordingContext["logs"] = [];
  return {
    env,
    fetch,
    sleep: (ms) => {
      waits.push(ms);
      return Promise.resolve();
    },
    log: (message, properties) => logs.push({ message, properties }),
    waits,
    logs,
    ...options,
  };
}

/** A job for `target` with neutral event fields; `overrides` replace any of them. */
export function job(target: string, overrides: Partial<DeliveryJob> = {}): DeliveryJob {
  return {
    target,
    text: "Build 42 failed on main",
    payload: {},
    source: "other",
    subscription: "ci-alerts",
    eventLabel: "pipeline",
    eventId: "ev_1",
    deliveryId: "d_1",
    ...overrides,
  };
}

/** A text of `paragraphs` paragraphs of numbered sentences, about 300 characters each. */
export function longText(paragraphs: number): string {
  return Array.from(
    { length: paragraphs },
    (_, p) =>
      Array.from({ length: 6 }, (_, s) => `Paragraph ${p} sentence ${s} says something.`).join(
        " ",
      ),
  ).join("\n\n");
}

/**
 * Awaits `promise` and returns the {@link TargetError} it rejects with.
 * @throws AssertionError when it resolves or rejects with something else.
 */
export async function targetError(promise: Promise<unknown>): Promise<TargetError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TargetError) return error;
    throw error;
  }
  assert.fail("expected a TargetError");
}

/** A running {@link scripted} server. `await using` closes it. */
export interface ScriptedServer extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`: the API URL to give the target. */
  url: string;
  /** `<method> <path>` of every request received, in order. */
  requests: string[];
}

/**
 * A loopback server answering every request with `answer`: a platform, or a proxy in front of
 * one, answering in a way the platform fakes of `tests/fakes` do not.
 */
export function scripted(
  answer: (request: Request) => Response | Promise<Response>,
): ScriptedServer {
  const requests: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    requests.push(`${request.method} ${new URL(request.url).pathname}`);
    return answer(request);
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    requests,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}
