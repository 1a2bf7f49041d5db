import assert from "node:assert/strict";
import { deliver } from "../../../lib/targets/mod.ts";
import { githubItem, isRepoName, parseGitHubItem } from "../../../lib/targets/github_comment.ts";
import { startFakeGitHub } from "../../fakes/chat_servers.ts";
import { githubExample, job, recordingContext, targetError } from "./_context.ts";

Deno.test("githubItem() finds the issue of an issues.opened example payload", () => {
  const payload = githubExample("issues", "opened");
  const issue = payload.issue as { number: number };
  const repository = payload.repository as { full_name: string };
  assert.deepEqual(githubItem(payload), { repo: repository.full_name, number: issue.number });
});

Deno.test("githubItem() finds the pull request of a pull_request.opened example payload", () => {
  const payload = githubExample("pull_request", "opened");
  const pull = payload.pull_request as { number: number };
  assert.deepEqual(githubItem(payload), { repo: "Codertocat/Hello-World", number: pull.number });
});

Deno.test("githubItem() finds nothing in a push payload", () => {
  const push = { ref: "refs/heads/main", repository: { full_name: "octo/repo" } };
  assert.equal(githubItem(push), undefined);
});

Deno.test("parseGitHubItem() reads owner/repo#123 and refuses other shapes", () => {
  assert.deepEqual(parseGitHubItem("octo-org/my.repo#123"), {
    repo: "octo-org/my.repo",
    number: 123,
  });
  for (const bad of ["octo/repo", "octo#1", "octo/repo#0", "octo/repo/x#1"]) {
    assert.throws(() => parseGitHubItem(bad), /owner\/repo#123/);
  }
});

Deno.test("deliver() github_comment comments on the issue of the payload with API headers", async () => {
  await using github = startFakeGitHub();
  const payload = githubExample("issue_comment", "created");
  const receipt = await deliver(
    job("github_comment", { payload, source: "github", eventLabel: "issue_comment" }),
    recordingContext(github.env),
  );
  assert.deepEqual(receipt, {
    target: "github_comment",
    parts: 1,
    destination: "Codertocat/Hello-World#1",
  });
  const [comment] = github.messages;
  assert.equal(comment.path, "/repos/Codertocat/Hello-World/issues/1/comments");
  assert.equal(comment.headers.authorization, `Bearer ${github.token}`);
  assert.equal(comment.headers.accept, "application/vnd.github+json");
  assert.equal(comment.headers["x-github-api-version"], "2022-11-28");
  assert.deepEqual(comment.body, {
    body: "Build 42 failed on main\n\n<!-- posted by the agent webhook gateway -->",
  });
});

Deno.test("deliver() github_comment uses --deliver-chat-id owner/repo#123 over the payload", async () => {
  await using github = startFakeGitHub();
  await deliver(
    job("github_comment", { chatId: "octo/other#77", payload: githubExample("issues", "opened") }),
    recordingContext(github.env),
  );
  assert.equal(github.messages[0].to, "octo/other#77");
});

Deno.test("deliver() github_comment accepts GH_TOKEN when GITHUB_TOKEN is unset", async () => {
  await using github = startFakeGitHub();
  const env = { GITHUB_API_URL: github.env.GITHUB_API_URL, GH_TOKEN: github.token };
  await deliver(job("github_comment", { chatId: "o/r#1" }), recordingContext(env));
  assert.equal(github.messages.length, 1);
});

Deno.test("deliver() github_comment without a token names both variables", async () => {
  const error = await targetError(
    deliver(job("github_comment", { chatId: "o/r#1" }), recordingContext({})),
  );
  assert.equal(error.permanent, true);
  assert.match(error.message, /GITHUB_TOKEN or GH_TOKEN/);
});

Deno.test("deliver() github_comment on a push payload fails permanently and says what it needs", async () => {
  await using github = startFakeGitHub();
  const payload = githubExample("push");
  const error = await targetError(
    deliver(job("github_comment", { payload, eventLabel: "push" }), recordingContext(github.env)),
  );
  assert.equal(error.permanent, true);
  assert.match(error.message, /no issue or pull request in the "push" payload/);
  assert.equal(github.requests, 0);
});

Deno.test("deliver() github_comment waits out a 403 secondary rate limit with Retry-After", async () => {
  await using github = startFakeGitHub();
  github.failNext(1, { status: 403, retryAfterSeconds: 2 });
  const ctx = recordingContext(github.env);
  await deliver(job("github_comment", { chatId: "o/r#1" }), ctx);
  assert.deepEqual(ctx.waits, [2000]);
  assert.equal(github.messages.length, 1);
});

Deno.test("deliver() github_comment on an unknown repository is a permanent 404", async () => {
  await using github = startFakeGitHub({ known: ["o/r"] });
  const error = await targetError(
    deliver(job("github_comment", { chatId: "o/missing#1" }), recordingContext(github.env)),
  );
  assert.equal(error.permanent, true);
  assert.equal(error.status, 404);
  assert.match(error.message, /Not Found/);
});

Deno.test("deliver() github_comment 502 is retryable", async () => {
  await using github = startFakeGitHub();
  github.failNext(1, { status: 502 });
  const error = await targetError(
    deliver(job("github_comment", { chatId: "o/r#1" }), recordingContext(github.env)),
  );
  assert.equal(error.permanent, false);
  assert.equal(error.status, 502);
});

Deno.test("github_comment refuses a payload repository name that would climb the API path", () => {
  for (const name of ["../../orgs/x", "o/..", "o/.", "o/r/../../x", "o r/x", "-o/r"]) {
    assert.equal(isRepoName(name), false, name);
    assert.equal(githubItem({ repository: { full_name: name }, issue: { number: 1 } }), undefined);
  }
  assert.equal(isRepoName("Codertocat/Hello-World.js"), true);
});
