/**
 * Shared assertions for the agent runner tests.
 *
 * @module
 */
import assert from "node:assert/strict";
import { AgentError } from "../../../lib/errors.ts";

/** Awaits `promise` and returns the AgentError it rejects with; fails the test otherwise. */
export async function agentError(promise: Promise<unknown>): Promise<AgentError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof AgentError, `expected AgentError, got ${error}`);
    return error;
  }
  assert.fail("expected the run to fail");
}
