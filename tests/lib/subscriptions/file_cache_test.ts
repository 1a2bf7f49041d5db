import assert from "node:assert/strict";
import { join } from "node:path";
import { SubscriptionFileCache } from "../../../lib/subscriptions/file_cache.ts";
import { updateSubscriptions } from "../../../lib/subscriptions/file_store.ts";
import { tempHome } from "../../_helpers.ts";

Deno.test("SubscriptionFileCache re-reads the file only when it changes", async () => {
  await using h = await tempHome();
  const path = join(h.home, "webhook_subscriptions.json");
  const cache = new SubscriptionFileCache(path, { recheckMs: 0 });
  assert.deepEqual(cache.current(), {});
  await updateSubscriptions(path, (records) => void (records.a = { secret: "1" }));
  const first = cache.current();
  assert.deepEqual(Object.keys(first), ["a"]);
  assert.equal(cache.current(), first, "unchanged file gives the same object");
  await updateSubscriptions(path, (records) => void (records.b = { secret: "2" }));
  assert.deepEqual(Object.keys(cache.current()), ["a", "b"]);
});

Deno.test("SubscriptionFileCache trusts its copy for recheckMs unless asked for a fresh one", async () => {
  await using h = await tempHome();
  const path = join(h.home, "webhook_subscriptions.json");
  let clock = 1_000;
  const cache = new SubscriptionFileCache(path, { recheckMs: 100, now: () => clock });
  assert.deepEqual(cache.current(), {});
  await updateSubscriptions(path, (records) => void (records.a = { secret: "1" }));
  clock += 99;
  assert.deepEqual(cache.current(), {}, "within recheckMs the file is not looked at");
  assert.deepEqual(Object.keys(cache.current({ fresh: true })), ["a"]);
  await updateSubscriptions(path, (records) => void delete records.a);
  clock += 100;
  assert.deepEqual(cache.current(), {}, "after recheckMs the change is seen");
});

Deno.test("SubscriptionFileCache keeps the last good records when the file turns corrupt", async () => {
  await using h = await tempHome();
  const path = join(h.home, "webhook_subscriptions.json");
  const cache = new SubscriptionFileCache(path, { recheckMs: 0 });
  await updateSubscriptions(path, (records) => void (records.a = { secret: "1" }));
  assert.deepEqual(Object.keys(cache.current()), ["a"]);
  await Deno.writeTextFile(path, "{not json");
  assert.deepEqual(Object.keys(cache.current()), ["a"]);
  assert.match(cache.lastError!.message, /corrupt/);
});

Deno.test("SubscriptionFileCache keeps the last good records when the file is emptied, and says so", async () => {
  await using h = await tempHome();
  const path = join(h.home, "webhook_subscriptions.json");
  const errors: (string | undefined)[] = [];
  const cache = new SubscriptionFileCache(path, {
    recheckMs: 0,
    onErrorChange: (error) => errors.push(error?.message),
  });
  await updateSubscriptions(path, (records) => void (records.a = { secret: "secret-1" }));
  assert.deepEqual(Object.keys(cache.current()), ["a"]);
  await Deno.writeTextFile(path, "");
  assert.deepEqual(Object.keys(cache.current()), ["a"], "the last good copy is served");
  assert.equal(cache.lastError?.file, path);
  assert.deepEqual(errors, [
    `${path} is corrupt: it is empty, where a JSON object keyed by ` +
    "subscription name is expected ({} when there are none); restore it from a backup or move " +
    "it away",
  ]);
  await Deno.remove(path);
  assert.deepEqual(cache.current(), {}, "a removed file is none");
  assert.deepEqual(errors.at(-1), undefined);
});
