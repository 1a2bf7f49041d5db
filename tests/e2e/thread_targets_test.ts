/**
 * End to end through the gateway process: a subscription's `deliver_extra.thread`, rendered from
 * each event's payload, reaches Telegram as `message_thread_id` and Slack as `thread_ts`
 * (docs/targets.md#threads). Loopback fakes play both platforms; GitHub signs with octokit.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { eventually, signedGitHub, startGatewayProcess, tempHome } from "../_helpers.ts";
import { enabledConfig } from "../_helpers.ts";
import { startFakeSlack, startFakeTelegram } from "../fakes/chat_servers.ts";

Deno.test("a rendered --deliver-thread reaches Telegram's topic and Slack's thread", async () => {
  await using home = await tempHome({ config: enabledConfig(0) });
  await using telegram = startFakeTelegram();
  await using slack = startFakeSlack();
  const subscriptions = {
    topic: {
      secret: "topic-secret",
      deliver: "telegram",
      deliver_only: true,
      prompt: "Issue #{issue.number}",
      deliver_extra: { chat_id: "-1001234567890", thread: "{topic}" },
    },
    reply: {
      secret: "reply-secret",
      deliver: "slack",
      deliver_only: true,
      prompt: "Issue #{issue.number}",
      deliver_extra: { chat_id: "C0123456789", thread: "{slack_ts}" },
    },
  };
  await Deno.writeTextFile(
    join(home.home, "webhook_subscriptions.json"),
    JSON.stringify(subscriptions),
  );
  await using gateway = await startGatewayProcess({
    AGENT_HOME: home.home,
    ...telegram.env,
    ...slack.env,
  });
  const payload = { action: "opened", issue: { number: 7 }, topic: 42, slack_ts: "1712.0001" };
  for (const name of ["topic", "reply"] as const) {
    const init = await signedGitHub(subscriptions[name].secret, payload);
    const response = await fetch(`${gateway.url}/webhooks/${name}`, init);
    await response.body?.cancel();
    assert.ok(response.ok, gateway.output());
  }
  const [topic] = await eventually(() => telegram.messages.length ? telegram.messages : null);
  const [reply] = await eventually(() => slack.messages.length ? slack.messages : null);
  assert.equal(topic.to, "-1001234567890");
  assert.equal(topic.body.message_thread_id, 42);
  assert.equal(topic.text, "Issue #7");
  assert.equal(reply.to, "C0123456789");
  assert.equal(reply.body.thread_ts, "1712.0001");
});
