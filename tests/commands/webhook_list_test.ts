import assert from "node:assert/strict";
import { join } from "node:path";
import { runCommand } from "../../commands/mod.ts";
import { enabledConfig, fakeContext, tempHome } from "../_helpers.ts";

const STATIC = enabledConfig(
  8644,
  "      routes:\n        ci-alerts: {events: [pipeline], deliver: log}\n",
);

Deno.test("list shows dynamic subscriptions and static routes with URL, events, target, secret", async () => {
  await using h = await tempHome({
    config: STATIC.replace("enabled: true", "enabled: true\n    extra_unused: 1"),
  });
  const env = { AGENT_HOME: h.home, WEBHOOK_SECRET: "global-secret-xyz" };
  await runCommand(
    ["webhook", "subscribe", "gh", "--secret", "my-secret-123", "--events", "issues"],
    fakeContext(env),
  );
  const ctx = fakeContext(env);
  assert.equal(await runCommand(["webhook", "list"], ctx), 0);
  const text = ctx.output();
  assert.match(text, /ci-alerts\s+\[static, config\.yaml\]/);
  assert.match(text, /global-secret-xyz \(global secret\)/);
  assert.match(text, /gh\n\s+URL:\s+http:\/\/localhost:8644\/webhooks\/gh\n\s+Events:\s+issues/);
  assert.match(text, /Secret:\s+my-secret-123/);

  const json = fakeContext(env);
  await runCommand(["webhook", "list", "--json"], json);
  const rows = JSON.parse(json.output());
  assert.deepEqual(rows.map((r: { name: string }) => r.name), ["ci-alerts", "gh"]);
  assert.equal(rows[1].webhook_url, "http://localhost:8644/webhooks/gh");
  assert.equal(rows[1].secret, "my-secret-123");
});

Deno.test("list warns of a subscription that a static route of the same name hides", async () => {
  await using h = await tempHome({ config: STATIC });
  await Deno.writeTextFile(
    join(h.home, "webhook_subscriptions.json"),
    JSON.stringify({ "ci-alerts": { secret: "hidden-secret-1" }, gh: { secret: "gh-secret-1" } }),
  );
  const ctx = fakeContext({ AGENT_HOME: h.home });
  assert.equal(await runCommand(["webhook", "list"], ctx), 0);
  assert.match(
    ctx.err.join("\n"),
    /Warning: subscription "ci-alerts" in .*webhook_subscriptions\.json is never served: config\.yaml has a static route of that name/,
  );
  assert.doesNotMatch(ctx.out.join("\n"), /hidden-secret-1/);
  assert.match(ctx.out.join("\n"), /ci-alerts\s+\[static, config\.yaml\]/);
});

Deno.test("list says why no sender can satisfy a secret: empty, or one no header can carry", async () => {
  await using h = await tempHome({ config: STATIC });
  await Deno.writeTextFile(
    join(h.home, "webhook_subscriptions.json"),
    JSON.stringify({
      empty: { secret: "" },
      accented: { secret: "gl-tökén" },
      signed: { secret: "gl-tökén", auth: "github" },
      good: { secret: "good-secret-1" },
    }),
  );
  const ctx = fakeContext({ AGENT_HOME: h.home });
  assert.equal(await runCommand(["webhook", "list"], ctx), 0);
  const warnings = ctx.err.filter((line) => /secret/.test(line));
  // Sorted as listed: the static route first, which has no secret and no global one to use.
  assert.deepEqual(warnings, [
    'Warning: "ci-alerts": it has no secret (an empty one counts as none), so every request is ' +
    "refused with 403; give it one: set its secret in config.yaml",
    'Warning: "accented": its secret has characters no header can carry (outside ASCII, control ' +
    "characters, or blanks at its ends): GitLab and Bearer senders, which send it as a header, " +
    "are always refused with 401. If its sender signs with it (GitHub, Stripe...), pin that " +
    "scheme: agent webhook subscribe accented --auth <scheme>; else give it another: agent " +
    "webhook rotate-secret accented",
    'Warning: "empty": it has no secret (an empty one counts as none), so every request is ' +
    "refused with 403; give it one: agent webhook rotate-secret empty",
  ]);
  assert.match(
    ctx.output(),
    /empty\n(?:.*\n){3}\s+Secret:\s+\(none: requests are refused with 403\)/,
  );
});

Deno.test("list and subscribe show a subscription's --format when it is set", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const env = { AGENT_HOME: h.home, TELEGRAM_BOT_TOKEN: "123:abc", OPENAI_API_KEY: "sk-x" };
  const subscribe = fakeContext(env);
  const args = ["webhook", "subscribe", "md", "--deliver-only", "--format", "markdown"];
  assert.equal(
    await runCommand([...args, "--deliver", "telegram", "--deliver-chat-id", "42"], subscribe),
    0,
  );
  assert.match(
    subscribe.out.join("\n"),
    /Mode: +direct delivery \(no agent run\), sent as markdown/,
  );
  const list = fakeContext(env);
  assert.equal(await runCommand(["webhook", "list"], list), 0);
  assert.match(list.out.join("\n"), /Deliver: +telegram \(chat 42\) \(direct\), as markdown/);
});

Deno.test("list shows a subscription's thread beside its chat", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const env = { AGENT_HOME: h.home, TELEGRAM_BOT_TOKEN: "123:abc", OPENAI_API_KEY: "sk-x" };
  const args = ["webhook", "subscribe", "topic", "--deliver", "telegram:-100123"];
  assert.equal(await runCommand([...args, "--deliver-thread", "{topic}"], fakeContext(env)), 0);
  const list = fakeContext(env);
  assert.equal(await runCommand(["webhook", "list"], list), 0);
  assert.match(list.out.join("\n"), /Deliver: +telegram \(chat -100123, thread \{topic\}\)/);
});
