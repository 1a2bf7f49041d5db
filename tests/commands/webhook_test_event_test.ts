import assert from "node:assert/strict";
import { join } from "node:path";
import { runCommand } from "../../commands/mod.ts";
import { enabledConfig, fakeContext, tempHome } from "../_helpers.ts";

Deno.test("test explains a refused connection", async () => {
  await using h = await tempHome({ config: enabledConfig(1) });
  const env = { AGENT_HOME: h.home };
  await runCommand(["webhook", "subscribe", "gh"], fakeContext(env));
  const ctx = fakeContext(env);
  assert.equal(await runCommand(["webhook", "test", "gh"], ctx), 1);
  assert.match(ctx.err.join("\n"), /is the gateway running\? Start it with: agent gateway run/i);
});

Deno.test("test names a hand-edited auth that is no scheme instead of sending", async () => {
  await using h = await tempHome({ config: enabledConfig(1) });
  const env = { AGENT_HOME: h.home };
  await runCommand(["webhook", "subscribe", "gh"], fakeContext(env));
  const file = join(h.home, "webhook_subscriptions.json");
  const records = JSON.parse(await Deno.readTextFile(file));
  records.gh.auth = "svix";
  await Deno.writeTextFile(file, JSON.stringify(records));
  const ctx = fakeContext(env);
  assert.equal(await runCommand(["webhook", "test", "gh"], ctx), 1);
  assert.match(
    ctx.err.join("\n"),
    /subscription "gh" in .*: auth: unknown signature scheme "svix"; valid schemes: github,.*so the gateway refuses its requests/,
  );
  assert.doesNotMatch(ctx.err.join("\n"), /is the gateway running/, "nothing was sent");
  // The other commands go on: the file is readable.
  const list = fakeContext(env);
  assert.equal(await runCommand(["webhook", "list"], list), 0);
  assert.match(
    list.err.join("\n"),
    /Warning: subscription "gh" .*the gateway refuses its requests until it is fixed/,
  );
});

Deno.test("test reports template paths the payload does not have", async () => {
  await using h = await tempHome({ config: enabledConfig(1) });
  const env = { AGENT_HOME: h.home };
  await runCommand(
    ["webhook", "subscribe", "gh", "--prompt", "{issue.title} {issue.nope}"],
    fakeContext(env),
  );
  const ctx = fakeContext(env);
  await runCommand(["webhook", "test", "gh", "--payload", '{"issue":{"title":"t"}}'], ctx);
  assert.match(ctx.err.join("\n"), /no \{issue\.nope\}/);
});

Deno.test("webhook test notes paths missing from the prompt and the chat id, and sends an id past 2^53 as written", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const env = { AGENT_HOME: h.home, TELEGRAM_BOT_TOKEN: "1:x" };
  await runCommand([
    "webhook",
    "subscribe",
    "tg",
    "--deliver",
    "telegram",
    "--deliver-only",
    "--deliver-chat-id",
    "{message.chat.id}",
    "--prompt",
    "id {id}, title {issue.title}",
  ], fakeContext(env));
  const bodies: string[] = [];
  const ctx = fakeContext(env, {
    fetch: (_url, init) => {
      bodies.push(String(init?.body));
      return Promise.resolve(Response.json({ status: "delivered" }, { status: 200 }));
    },
  });
  const payload = '{"id": 12345678901234567891}';
  assert.equal(await runCommand(["webhook", "test", "tg", "--payload", payload], ctx), 0);
  const notes = ctx.err.join("\n");
  assert.match(notes, /no \{issue\.title\}; these stay literally in the prompt/);
  assert.match(
    notes,
    /no \{message\.chat\.id\}; these stay literally in the chat id the message goes to/,
  );
  assert.equal(bodies.length, 1);
  assert.match(bodies[0], /"id":12345678901234567891[,}]/, "not rounded to 12345678901234567000");
});
