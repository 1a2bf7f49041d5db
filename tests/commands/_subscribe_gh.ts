/**
 * What the tests of `webhook subscribe`'s routing flags share: running `subscribe gh` in a home
 * and reading the record it stored.
 *
 * @module
 */
import { join } from "node:path";
import { runCommand } from "../../commands/mod.ts";
import type { Subscription } from "../../lib/subscriptions/mod.ts";
import { readSubscriptions } from "../../lib/subscriptions/file_store.ts";
import { fakeContext } from "../_helpers.ts";

/**
 * Runs `agent webhook subscribe gh` with `args` in `home`.
 * @returns its context, with what it printed
 */
export async function subscribeGh(
  home: string,
  args: string[],
): Promise<ReturnType<typeof fakeContext>> {
  const ctx = fakeContext({ AGENT_HOME: home });
  await runCommand(["webhook", "subscribe", "gh", ...args], ctx);
  return ctx;
}

/** The record of `gh` as stored in the home's `webhook_subscriptions.json`. */
export async function storedGh(home: string): Promise<Subscription> {
  return (await readSubscriptions(join(home, "webhook_subscriptions.json"))).gh;
}
