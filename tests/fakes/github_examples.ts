/**
 * Real GitHub webhook payloads from `@octokit/webhooks-examples`, by event name and action.
 *
 * @module
 */
import assert from "node:assert/strict";
import examples from "@octokit/webhooks-examples" with { type: "json" };

type Definition = { name: string; examples: Record<string, unknown>[] };

/**
 * A copy of the first example payload of `name` (and `action`, when given).
 * @throws AssertionError when the package has no such example
 */
export function githubExample(name: string, action?: string): Record<string, unknown> {
  const found = (examples as unknown as Definition[])
    .find((definition) => definition.name === name)?.examples
    .find((example) => action === undefined || example.action === action);
  assert.ok(found, `no ${name}${action ? `.${action}` : ""} example in @octokit/webhooks-examples`);
  return structuredClone(found);
}
