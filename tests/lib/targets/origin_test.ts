import assert from "node:assert/strict";
import { deliver } from "../../../lib/targets/mod.ts";
import { parseHome } from "../../../lib/targets/origin.ts";
import {
  startFakeGitHub,
  startFakeGitLab,
  startFakeSlack,
  startFakeTelegram,
} from "../../fakes/chat_servers.ts";
import { githubExample, job, recordingContext, targetError } from "./_context.ts";

Deno.test("deliver() origin answers a GitHub issues.opened event with a comment on the issue", async () => {
  await using github = startFakeGitHub();
  const payload = githubExample("issues", "opened");
  const receipt = await deliver(
    job("origin", { payload, source: "github", eventLabel: "issues" }),
    recordingContext(github.env, { homeTarget: "telegram:1" }),
  );
  assert.deepEqual(receipt, {
    target: "github_comment",
    parts: 1,
    destination: "Codertocat/Hello-World#1",
  });
  assert.equal(github.messages[0].path, "/repos/Codertocat/Hello-World/issues/1/comments");
});

Deno.test("deliver() origin answers a GitHub pull_request.opened event on the pull request", async () => {
  await using github = startFakeGitHub();
  const payload = githubExample("pull_request", "opened");
  await deliver(
    job("origin", { payload, source: "github", eventLabel: "pull_request" }),
    recordingContext(github.env),
  );
  assert.equal(github.messages[0].to, "Codertocat/Hello-World#2");
});

Deno.test("deliver() origin ignores the chat id for a GitHub reply: the payload names the item", async () => {
  await using github = startFakeGitHub();
  const payload = githubExample("issues", "opened");
  await deliver(
    job("origin", { payload, source: "github", chatId: "C0123" }),
    recordingContext(github.env),
  );
  assert.equal(github.messages[0].to, "Codertocat/Hello-World#1");
});

Deno.test("deliver() origin answers a GitLab merge request event with a note", async () => {
  await using gitlab = startFakeGitLab();
  const payload = {
    object_kind: "merge_request",
    project: { id: 9, path_with_namespace: "group/app" },
    object_attributes: { iid: 4, action: "open" },
  };
  const receipt = await deliver(
    job("origin", { payload, source: "gitlab", eventLabel: "merge_request" }),
    recordingContext(gitlab.env),
  );
  assert.equal(receipt.target, "gitlab_comment");
  assert.equal(gitlab.messages[0].path, "/api/v4/projects/9/merge_requests/4/notes");
});

Deno.test("deliver() origin sends a Stripe event to extra.home, with its chat and thread", async () => {
  await using slack = startFakeSlack();
  const ctx = recordingContext(slack.env, { homeTarget: "slack:C0HOME:1700000000.000100" });
  const receipt = await deliver(
    job("origin", { source: "stripe", payload: { type: "payment_intent.succeeded" } }),
    ctx,
  );
  assert.deepEqual(receipt, {
    target: "slack",
    parts: 1,
    destination: "C0HOME:1700000000.000100",
  });
  assert.equal(slack.messages[0].thread, "1700000000.000100");
});

Deno.test("deliver() origin sends a GitHub push (no issue) to extra.home", async () => {
  await using telegram = startFakeTelegram();
  const ctx = recordingContext(telegram.env, { homeTarget: "telegram:123456" });
  const receipt = await deliver(
    job("origin", { source: "github", payload: githubExample("push"), eventLabel: "push" }),
    ctx,
  );
  assert.equal(receipt.target, "telegram");
  assert.equal(telegram.messages[0].to, "123456");
});

Deno.test("deliver() origin home without a chat id uses the platform's home channel", async () => {
  await using telegram = startFakeTelegram();
  const ctx = recordingContext(
    { ...telegram.env, TELEGRAM_HOME_CHANNEL: "777" },
    { homeTarget: "telegram" },
  );
  await deliver(job("origin", { source: "standard" }), ctx);
  assert.equal(telegram.messages[0].to, "777");
});

Deno.test("deliver() origin with no reply place and no home fails permanently and says why", async () => {
  const error = await targetError(
    deliver(job("origin", { source: "stripe" }), recordingContext({})),
  );
  assert.equal(error.permanent, true);
  assert.match(error.message, /"stripe" senders have no place to reply to/);
  assert.match(error.message, /extra\.home/);
});

Deno.test("deliver() origin for a GitHub event without an issue and no home says so", async () => {
  const error = await targetError(
    deliver(job("origin", { source: "github", eventLabel: "push" }), recordingContext({})),
  );
  assert.match(error.message, /GitHub "push" event has no issue or pull request/);
});

Deno.test("deliver() origin refuses an unknown home target and a home of origin", async () => {
  for (const homeTarget of ["sms:123", "origin:1"]) {
    const error = await targetError(
      deliver(job("origin"), recordingContext({}, { homeTarget })),
    );
    assert.equal(error.permanent, true, homeTarget);
    assert.match(error.message, /extra\.home/);
  }
});

Deno.test("deliver() origin does not fall back to home when the GitHub token is missing", async () => {
  await using telegram = startFakeTelegram();
  const payload = githubExample("issues", "opened");
  const ctx = recordingContext(telegram.env, { homeTarget: "telegram:1" });
  const error = await targetError(deliver(job("origin", { payload, source: "github" }), ctx));
  assert.equal(error.permanent, true);
  assert.match(error.message, /GITHUB_TOKEN/);
  assert.equal(telegram.requests, 0);
});

Deno.test("parseHome() splits the target name from a chat id that may hold colons", () => {
  assert.deepEqual(parseHome("telegram:-1001:7"), { target: "telegram", chatId: "-1001:7" });
  assert.deepEqual(parseHome("log"), { target: "log" });
  assert.deepEqual(parseHome("slack:"), { target: "slack", chatId: undefined });
});
