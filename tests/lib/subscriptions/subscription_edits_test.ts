/**
 * Removing, disabling and enabling a subscription (lib/subscriptions/subscription_edits.ts), the
 * one code `agent webhook remove`, `disable`, `enable` and the dashboard's buttons share, on a
 * real subscription file: what each writes, and the same refusals whichever calls it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runCommand } from "../../../commands/mod.ts";
import { loadConfig } from "../../../lib/config/mod.ts";
import { NotFoundError, UsageError } from "../../../lib/errors.ts";
import { readSubscriptions } from "../../../lib/subscriptions/file_store.ts";
import {
  removeSubscription,
  setSubscriptionDisabled,
} from "../../../lib/subscriptions/subscription_edits.ts";
import { enabledConfig, fakeContext, tempHome } from "../../_helpers.ts";

const NOW = "2026-02-03T04:05:06.000Z";

/** A home with subscriptions `gh` and `ci`, made by `subscribe`, and its configuration. */
async function home() {
  const h = await tempHome({
    config: enabledConfig() + "      routes:\n        static: {events: [push], deliver: log}\n",
  });
  for (const name of ["gh", "ci"]) {
    await runCommand(["webhook", "subscribe", name], fakeContext({ AGENT_HOME: h.home }));
  }
  const config = await loadConfig({ AGENT_HOME: h.home });
  const records = () => readSubscriptions(join(h.home, "webhook_subscriptions.json"));
  return { h, config, records };
}

Deno.test("setSubscriptionDisabled() marks and clears disabled once, keeping the record", async () => {
  const { h, config, records } = await home();
  await using _ = h;
  const before = (await records()).gh;
  assert.equal(await setSubscriptionDisabled("gh", { disabled: true, config, nowIso: NOW }), true);
  assert.deepEqual((await records()).gh, { ...before, disabled: true, updated_at: NOW });
  assert.equal(await setSubscriptionDisabled("gh", { disabled: true, config, nowIso: NOW }), false);
  assert.equal(await setSubscriptionDisabled("gh", { disabled: false, config, nowIso: NOW }), true);
  assert.equal((await records()).gh.disabled, undefined);
});

Deno.test("removeSubscription() removes one record, and refuses what remove refuses", async () => {
  const { h, config, records } = await home();
  await using _ = h;
  await removeSubscription("gh", config);
  assert.deepEqual(Object.keys(await records()), ["ci"]);
  const notFound = (error: unknown) =>
    error instanceof NotFoundError &&
    error.message === 'No subscription named "gh" (see: agent webhook list)';
  await assert.rejects(removeSubscription("gh", config), notFound);
  const usage = (pattern: RegExp) => (error: unknown) =>
    error instanceof UsageError && pattern.test(error.message);
  await assert.rejects(removeSubscription("static", config), usage(/defined in config\.yaml/));
  await assert.rejects(
    setSubscriptionDisabled("Bad", { disabled: true, config, nowIso: NOW }),
    usage(/Cannot disable "Bad": name must match/),
  );
  const cli = fakeContext({ AGENT_HOME: h.home });
  await assert.rejects(runCommand(["webhook", "remove", "gh"], cli), notFound, "the same");
});
