/**
 * `agent webhook subscribe`: the `--deliver <target>:<chat>` shorthands and `--deliver-thread`
 * (docs/targets.md#threads), as stored in the subscription file.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runCommand } from "../../commands/mod.ts";
import { UsageError } from "../../lib/errors.ts";
import { readSubscriptions } from "../../lib/subscriptions/file_store.ts";
import { enabledConfig, fakeContext, tempHome } from "../_helpers.ts";

const TOKENS = { TELEGRAM_BOT_TOKEN: "t", SLACK_BOT_TOKEN: "s", DISCORD_BOT_TOKEN: "d" };

/** Subscribes `name` with `args` in `home`, and returns its stored target fields. */
async function stored(home: string, name: string, args: string[]) {
  await runCommand(
    ["webhook", "subscribe", name, ...args],
    fakeContext({ AGENT_HOME: home, ...TOKENS }),
  );
  const { deliver, deliver_extra } = (await readSubscriptions(
    join(home, "webhook_subscriptions.json"),
  ))[name];
  return { deliver, deliver_extra };
}

Deno.test("subscribe --deliver <target>:<chat> stores what --deliver-chat-id stores", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const cases: [string, string[]][] = [
    ["telegram:-1001234567890:42", ["telegram", "--deliver-chat-id", "-1001234567890:42"]],
    ["telegram:@my_channel", ["telegram", "--deliver-chat-id", "@my_channel"]],
    ["discord:123456789012345678", ["discord", "--deliver-chat-id", "123456789012345678"]],
    ["slack:C0123456789", ["slack", "--deliver-chat-id", "C0123456789"]],
  ];
  for (const [short, long] of cases) {
    const shorthand = await stored(h.home, "short", ["--deliver", short]);
    const longForm = await stored(h.home, "long", ["--deliver", ...long]);
    assert.deepEqual(shorthand, longForm, short);
    assert.equal(shorthand.deliver, long[0]);
  }
});

Deno.test("subscribe refuses a --deliver shorthand given with --deliver-chat-id", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const run = (...args: string[]) =>
    runCommand(["webhook", "subscribe", "x", ...args], fakeContext({ AGENT_HOME: h.home }));
  await assert.rejects(
    () => run("--deliver", "telegram:-100123", "--deliver-chat-id", "-100456"),
    (error: Error) =>
      error instanceof UsageError && /already names the chat: drop --deliver-chat-id/.test(
        error.message,
      ),
  );
  await assert.rejects(
    () => run("--deliver", "log:x"),
    /only telegram, discord, slack take a chat/,
  );
  assert.deepEqual(await readSubscriptions(join(h.home, "webhook_subscriptions.json")), {});
});

Deno.test("subscribe --deliver-thread stores a template, keeps the chat, and none removes it", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  assert.deepEqual(
    await stored(h.home, "x", ["--deliver", "slack:C0123", "--deliver-thread", "{event.ts}"]),
    { deliver: "slack", deliver_extra: { chat_id: "C0123", thread: "{event.ts}" } },
  );
  assert.deepEqual(await stored(h.home, "x", ["--deliver-thread", "1712345678.000100"]), {
    deliver: "slack",
    deliver_extra: { chat_id: "C0123", thread: "1712345678.000100" },
  });
  assert.deepEqual(await stored(h.home, "x", ["--deliver-thread", "none"]), {
    deliver: "slack",
    deliver_extra: { chat_id: "C0123" },
  });
});

Deno.test("subscribe refuses a thread no target can use", async () => {
  await using h = await tempHome({ config: enabledConfig() });
  const run = (...args: string[]) =>
    runCommand(
      ["webhook", "subscribe", "x", ...args],
      fakeContext({ AGENT_HOME: h.home, ...TOKENS }),
    );
  await assert.rejects(
    () => run("--deliver-thread", "7"),
    /for a chat target .*log has no threads/,
  );
  await assert.rejects(
    () => run("--deliver", "telegram:-100123", "--deliver-thread", "general"),
    /--deliver-thread "-100123:general": a Telegram topic must be a message thread id/,
  );
  await assert.rejects(
    () => run("--deliver", "telegram:-100123:5", "--deliver-thread", "7"),
    /already names a thread after its colon/,
  );
  await assert.rejects(() => run("--deliver", "slack:C1", "--deliver-thread", ""), /is empty/);
  assert.deepEqual(await readSubscriptions(join(h.home, "webhook_subscriptions.json")), {});
});
