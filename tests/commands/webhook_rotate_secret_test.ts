import assert from "node:assert/strict";
import { join } from "node:path";
import { webhookRotateSecret } from "../../commands/webhook_rotate_secret.ts";
import { webhookSubscribe } from "../../commands/webhook_subscribe.ts";
import { loadConfig } from "../../lib/config/mod.ts";
import { NotFoundError, UsageError } from "../../lib/errors.ts";
import { createMemoryRateLimiter } from "../../lib/subscriptions/rate_limit.ts";
import { openStateStore } from "../../lib/state/sqlite/mod.ts";
import { acceptedSecrets } from "../../lib/subscriptions/mod.ts";
import { readSubscriptions } from "../../lib/subscriptions/file_store.ts";
import { createApp } from "../../server/app.ts";
import { createSignatureVerifier } from "../../lib/signatures/mod.ts";
import { enabledConfig, fakeContext, signedIssue, tempHome } from "../_helpers.ts";

const T0 = Date.parse("2026-03-01T10:00:00Z");
const HOUR = 3_600_000;
const OLD = "old-secret-0123456789";
const STATIC = enabledConfig(8644, "      routes:\n        ci-alerts: {events: [pipeline]}\n");

/** A home with the subscription `gh` whose secret is {@link OLD}, created at {@link T0}. */
async function homeWithSubscription(config = enabledConfig()) {
  const home = await tempHome({ config });
  const ctx = fakeContext({ AGENT_HOME: home.home }, { now: () => T0 });
  assert.equal(await webhookSubscribe.run(["gh", "--secret", OLD], ctx), 0);
  return home;
}

function rotateAt(home: string, nowMs: number, args: string[]) {
  const ctx = fakeContext({ AGENT_HOME: home }, { now: () => nowMs });
  return { ctx, done: webhookRotateSecret.run(args, ctx) };
}

async function stored(home: string) {
  return (await readSubscriptions(join(home, "webhook_subscriptions.json"))).gh;
}

Deno.test("rotate-secret issues a 43-character secret and keeps the old one for 24 h", async () => {
  await using h = await homeWithSubscription();
  const { ctx, done } = rotateAt(h.home, T0 + HOUR, ["gh"]);
  assert.equal(await done, 0);
  const record = await stored(h.home);
  assert.match(record.secret!, /^[A-Za-z0-9_-]{43}$/);
  assert.deepEqual(record.previous_secrets, [
    { secret: OLD, expires_at: "2026-03-02T11:00:00.000Z" },
  ]);
  assert.equal(record.updated_at, "2026-03-01T11:00:00.000Z");
  assert.equal(record.created_at, "2026-03-01T10:00:00.000Z");
  const output = ctx.output();
  assert.match(output, new RegExp(`New secret:\\s+${record.secret}`));
  assert.match(
    output,
    /Old secret:\s+old-secret-0123456789 \(accepted until 2026-03-02T11:00:00.000Z\)/,
  );
  assert.match(output, /URL:\s+http:\/\/localhost:8644\/webhooks\/gh/);
});

Deno.test("rotate-secret takes --secret and --grace in minutes, hours and days", async () => {
  await using h = await homeWithSubscription();
  const cases: [string, number][] = [["30m", 30 * 60_000], ["7d", 7 * 24 * HOUR], ["90s", 90_000]];
  let current = OLD;
  for (const [grace, ms] of cases) {
    const next = `secret-for-${grace}-rotation`;
    assert.equal(await rotateAt(h.home, T0, ["gh", "--grace", grace, "--secret", next]).done, 0);
    const record = await stored(h.home);
    assert.equal(record.secret, next);
    const entry = record.previous_secrets!.at(-1)!;
    assert.deepEqual(entry, { secret: current, expires_at: new Date(T0 + ms).toISOString() });
    current = next;
  }
});

Deno.test("rotate-secret --grace 0 stops the old secret at once", async () => {
  await using h = await homeWithSubscription();
  const { ctx, done } = rotateAt(h.home, T0, [
    "gh",
    "--grace",
    "0",
    "--secret",
    "brand-new-secret",
  ]);
  assert.equal(await done, 0);
  const record = await stored(h.home);
  assert.equal(record.secret, "brand-new-secret");
  assert.equal(record.previous_secrets, undefined);
  assert.match(ctx.output(), /Old secret:\s+no longer accepted/);
  assert.doesNotMatch(ctx.output(), new RegExp(OLD));
});

Deno.test("rotate-secret ends earlier secrets with the old one: --grace 0 leaves only the new", async () => {
  await using h = await homeWithSubscription();
  await rotateAt(h.home, T0, ["gh", "--grace", "7d", "--secret", "second-secret"]).done;
  // A shorter grace ends the secret of the earlier rotation with the one retired now.
  await rotateAt(h.home, T0 + HOUR, ["gh", "--grace", "1h", "--secret", "third-secret"]).done;
  assert.deepEqual((await stored(h.home)).previous_secrets, [
    { secret: OLD, expires_at: "2026-03-01T12:00:00.000Z" },
    { secret: "second-secret", expires_at: "2026-03-01T12:00:00.000Z" },
  ]);
  const { ctx, done } = rotateAt(h.home, T0 + HOUR, [
    "gh",
    "--grace",
    "0",
    "--secret",
    "fourth-secret",
  ]);
  assert.equal(await done, 0);
  const record = await stored(h.home);
  assert.equal(record.previous_secrets, undefined);
  const route = { ...record, name: "gh", origin: "dynamic" as const };
  assert.deepEqual(acceptedSecrets(route, undefined, T0 + HOUR), ["fourth-secret"]);
  assert.doesNotMatch(ctx.output(), /Earlier|old-secret|second-secret|third-secret/);
  assert.match(ctx.output(), /requests signed with any other are refused/);
});

Deno.test("rotate-secret drops previous secrets that have expired and keeps live ones", async () => {
  await using h = await homeWithSubscription();
  await rotateAt(h.home, T0, ["gh", "--grace", "1h", "--secret", "second-secret"]).done;
  await rotateAt(h.home, T0 + 10 * 60_000, ["gh", "--grace", "1h", "--secret", "third-secret"])
    .done;
  // At T0 + 2 h, OLD (until T0 + 1 h) and second (until T0 + 1 h 10 min) have both expired.
  const { ctx, done } = rotateAt(h.home, T0 + 2 * HOUR, ["gh", "--secret", "fourth-secret"]);
  assert.equal(await done, 0);
  assert.deepEqual((await stored(h.home)).previous_secrets, [
    { secret: "third-secret", expires_at: "2026-03-02T12:00:00.000Z" },
  ]);
  assert.doesNotMatch(ctx.output(), /second-secret|old-secret/);

  await rotateAt(h.home, T0 + 2 * HOUR, ["gh", "--grace", "5m", "--secret", "fifth-secret"]).done;
  const { ctx: listed, done: again } = rotateAt(h.home, T0 + 2 * HOUR, ["gh", "--json"]);
  assert.equal(await again, 0);
  const json = JSON.parse(listed.output());
  assert.deepEqual(json.previous_secrets.map((p: { secret: string }) => p.secret), [
    "third-secret",
    "fourth-secret",
    "fifth-secret",
  ]);
  assert.equal(json.secret, (await stored(h.home)).secret);
  assert.equal(json.webhook_url, "http://localhost:8644/webhooks/gh");
});

Deno.test("rotate-secret refuses an unknown name with NotFoundError and leaves the file", async () => {
  await using h = await homeWithSubscription();
  const path = join(h.home, "webhook_subscriptions.json");
  const before = await Deno.readTextFile(path);
  await assert.rejects(rotateAt(h.home, T0, ["nope"]).done, NotFoundError);
  assert.equal(await Deno.readTextFile(path), before);
});

Deno.test("rotate-secret refuses a static route from config.yaml", async () => {
  await using h = await homeWithSubscription(STATIC);
  await assert.rejects(
    rotateAt(h.home, T0, ["ci-alerts"]).done,
    (error: Error) => error instanceof UsageError && /defined in config\.yaml/.test(error.message),
  );
});

Deno.test("rotate-secret answers a disabled platform with exit 1 and the way to enable it", async () => {
  await using h = await tempHome({ config: "platforms:\n  webhook:\n    enabled: false\n" });
  const { ctx, done } = rotateAt(h.home, T0, ["gh"]);
  assert.equal(await done, 1);
  assert.match(ctx.err.join("\n"), /not enabled/);
});

Deno.test("rotate-secret refuses bad arguments with a usage error and changes nothing", async () => {
  await using h = await homeWithSubscription();
  const before = await stored(h.home);
  const bad = [
    [],
    ["gh", "other"],
    ["Bad Name"],
    ["gh", "--grace", "24"],
    ["gh", "--grace", "1w"],
    ["gh", "--grace", "-1h"],
    ["gh", "--grace", "400d"],
    ["gh", "--secret", "short"],
    ["gh", "--secret", OLD],
    ["gh", "--unknown"],
  ];
  for (const args of bad) {
    await assert.rejects(rotateAt(h.home, T0, args).done, UsageError, args.join(" "));
  }
  assert.deepEqual(await stored(h.home), before);
});

Deno.test("rotate-secret checks a new secret against the scheme as subscribe does", async () => {
  await using h = await homeWithSubscription();
  const subscribe = (args: string[]) =>
    webhookSubscribe.run(["gh", ...args], fakeContext({ AGENT_HOME: h.home }, { now: () => T0 }));
  assert.equal(await subscribe(["--auth", "gitlab"]), 0);
  const before = await stored(h.home);
  await assert.rejects(
    rotateAt(h.home, T0, ["gh", "--secret", " leading-space-secret"]).done,
    (error: Error) =>
      error instanceof UsageError &&
      /--auth gitlab senders send the secret as a header/.test(error.message),
  );
  assert.deepEqual(await stored(h.home), before, "the old secret stays the only one");

  assert.equal(await subscribe(["--auth", "standard"]), 0);
  const { ctx, done } = rotateAt(h.home, T0, ["gh", "--secret", "plain-secret-123"]);
  assert.equal(await done, 0);
  assert.match(ctx.err.join("\n"), /Warning: the secret does not start with whsec_/);
});

Deno.test("the gateway accepts old and new secrets during the grace and only the new after", async () => {
  await using h = await homeWithSubscription();
  await rotateAt(h.home, T0, ["gh", "--grace", "1h", "--secret", "the-new-secret-42"]).done;
  const config = await loadConfig({ AGENT_HOME: h.home, HOME: "/nonexistent" });
  const records = await readSubscriptions(config.paths.subscriptions);
  const store = openStateStore(join(h.home, "gateway.db"));
  let clock = T0 + 59 * 60_000;
  const app = createApp({
    findRoute: (name) => records[name] && { ...records[name], name, origin: "dynamic" },
    maxBodyBytes: 4096,
    rateLimitPerMinute: 60,
    verifier: createSignatureVerifier(),
    rateLimiter: createMemoryRateLimiter(),
    store,
    onAccepted: () => {},
    deliverNow: () => Promise.reject(new Error("not used")),
    now: () => clock,
    newId: () => crypto.randomUUID(),
  });
  const post = async (secret: string) => {
    const response = await app.request("/webhooks/gh", await signedIssue(secret));
    await response.body?.cancel();
    return response.status;
  };
  try {
    assert.deepEqual([await post(OLD), await post("the-new-secret-42")], [202, 202]);
    clock = T0 + HOUR;
    assert.deepEqual([await post(OLD), await post("the-new-secret-42")], [401, 202]);
    assert.equal((await store.listEvents({})).length, 3);
  } finally {
    await store.close();
  }
});
