import assert from "node:assert/strict";
import { UsageError } from "../../../lib/errors.ts";
import { validateTarget } from "../../../lib/targets/mod.ts";

const tokens = {
  TELEGRAM_BOT_TOKEN: "t",
  DISCORD_BOT_TOKEN: "d",
  SLACK_BOT_TOKEN: "s",
  GITHUB_TOKEN: "g",
  GITLAB_TOKEN: "l",
};

Deno.test("validateTarget() refuses an unknown target with the list of valid ones", () => {
  assert.throws(
    () => validateTarget({ target: "sms", deliverOnly: false, env: {} }),
    (error: unknown) =>
      error instanceof UsageError &&
      error.message.includes(`"sms"`) &&
      error.message.includes(
        "log, telegram, discord, slack, github_comment, gitlab_comment, origin",
      ),
  );
});

Deno.test("validateTarget() refuses --deliver-only with log or with no target", () => {
  for (const target of ["log", ""]) {
    assert.throws(
      () => validateTarget({ target, deliverOnly: true, env: {} }),
      (error: unknown) => error instanceof UsageError && /--deliver-only/.test(error.message),
    );
  }
});

Deno.test("validateTarget() accepts log (the default) and an empty target without delivery-only", () => {
  assert.deepEqual(validateTarget({ target: "log", deliverOnly: false, env: {} }), []);
  assert.deepEqual(validateTarget({ target: "", deliverOnly: false, env: {} }), []);
});

Deno.test("validateTarget() refuses a chat target with no chat id and no home channel", () => {
  for (
    const [target, home] of [
      ["telegram", "TELEGRAM_HOME_CHANNEL"],
      ["discord", "DISCORD_HOME_CHANNEL"],
      ["slack", "SLACK_HOME_CHANNEL"],
    ]
  ) {
    assert.throws(
      () => validateTarget({ target, deliverOnly: true, env: tokens }),
      (error: unknown) =>
        error instanceof UsageError && error.message.includes(home) &&
        error.message.includes("--deliver-chat-id"),
    );
  }
});

Deno.test("validateTarget() accepts a chat target with a home channel and no chat id", () => {
  const env = { ...tokens, TELEGRAM_HOME_CHANNEL: "123" };
  assert.deepEqual(validateTarget({ target: "telegram", deliverOnly: true, env }), []);
});

Deno.test("validateTarget() only warns about a missing token", () => {
  const warnings = validateTarget({
    target: "telegram",
    chatId: "123",
    deliverOnly: true,
    env: {},
  });
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /TELEGRAM_BOT_TOKEN is not set; the gateway needs it/);
  const github = validateTarget({ target: "github_comment", deliverOnly: false, env: {} });
  assert.match(github[0], /GITHUB_TOKEN or GH_TOKEN/);
  assert.deepEqual(
    validateTarget({ target: "github_comment", deliverOnly: false, env: { GH_TOKEN: "x" } }),
    [],
  );
});

Deno.test("validateTarget() refuses a literal chat id of the wrong shape", () => {
  const cases = [
    { target: "telegram", chatId: "123:general" },
    { target: "discord", chatId: "#general" },
    { target: "slack", chatId: "C1:yesterday" },
    { target: "github_comment", chatId: "octo/repo" },
    { target: "gitlab_comment", chatId: "group/app" },
  ];
  for (const { target, chatId } of cases) {
    assert.throws(
      () => validateTarget({ target, chatId, deliverOnly: true, env: tokens }),
      (error: unknown) => error instanceof UsageError && error.message.includes(chatId),
      target,
    );
  }
});

Deno.test("validateTarget() leaves a chat id with placeholders to be checked per event", () => {
  const chatId = "{repository.full_name}#{issue.number}";
  assert.deepEqual(
    validateTarget({ target: "github_comment", chatId, deliverOnly: true, env: tokens }),
    [],
  );
});

Deno.test("validateTarget() accepts origin without any token or chat id", () => {
  assert.deepEqual(validateTarget({ target: "origin", deliverOnly: true, env: {} }), []);
});
