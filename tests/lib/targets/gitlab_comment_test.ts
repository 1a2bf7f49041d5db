import assert from "node:assert/strict";
import { deliver } from "../../../lib/targets/mod.ts";
import { gitlabItem, parseGitLabItem } from "../../../lib/targets/gitlab_comment.ts";
import { startFakeGitLab } from "../../fakes/chat_servers.ts";
import { job, recordingContext, targetError } from "./_context.ts";

// Shapes from https://docs.gitlab.com/user/project/integrations/webhook_events/ (trimmed).
const project = {
  id: 1,
  name: "Gitlab Test",
  path_with_namespace: "gitlabhq/gitlab-test",
  web_url: "http://example.com/gitlabhq/gitlab-test",
};
const mergeRequestEvent = {
  object_kind: "merge_request",
  event_type: "merge_request",
  project,
  object_attributes: { id: 99, iid: 1, title: "MS-Viewport", state: "opened", action: "open" },
};
const issueEvent = {
  object_kind: "issue",
  event_type: "issue",
  project,
  object_attributes: { id: 301, iid: 23, title: "New API: create/update/delete file" },
};
const noteOnMergeRequest = {
  object_kind: "note",
  event_type: "note",
  project: { ...project, id: 5 },
  object_attributes: { id: 1244, note: "This MR needs work.", noteable_type: "MergeRequest" },
  merge_request: { id: 7, iid: 1, title: "Tempora et eos debitis quae laborum et." },
};
const noteOnIssue = {
  object_kind: "note",
  event_type: "note",
  project: { ...project, id: 5 },
  object_attributes: { id: 1241, note: "Hello world", noteable_type: "Issue" },
  issue: { id: 92, iid: 17, title: "test" },
};
const pipelineForMergeRequest = {
  object_kind: "pipeline",
  project,
  object_attributes: { id: 31, iid: 3, ref: "main", status: "failed" },
  merge_request: { id: 1, iid: 4, title: "Test" },
};
const pushEvent = { object_kind: "push", project, ref: "refs/heads/main", commits: [] };

Deno.test("gitlabItem() reads merge request, issue, note and pipeline payloads", () => {
  assert.deepEqual(gitlabItem(mergeRequestEvent), { project: "1", kind: "merge_requests", iid: 1 });
  assert.deepEqual(gitlabItem(issueEvent), { project: "1", kind: "issues", iid: 23 });
  assert.deepEqual(gitlabItem(noteOnMergeRequest), {
    project: "5",
    kind: "merge_requests",
    iid: 1,
  });
  assert.deepEqual(gitlabItem(noteOnIssue), { project: "5", kind: "issues", iid: 17 });
  assert.deepEqual(gitlabItem(pipelineForMergeRequest), {
    project: "1",
    kind: "merge_requests",
    iid: 4,
  });
  assert.equal(gitlabItem(pushEvent), undefined);
});

Deno.test("parseGitLabItem() reads <project>!<iid> and <project>#<iid>", () => {
  assert.deepEqual(parseGitLabItem("42!7"), { project: "42", kind: "merge_requests", iid: 7 });
  assert.deepEqual(parseGitLabItem("group/sub/app#3"), {
    project: "group/sub/app",
    kind: "issues",
    iid: 3,
  });
  assert.throws(() => parseGitLabItem("group/app"), /<project>!<iid>/);
});

Deno.test("deliver() gitlab_comment posts a note on the merge request with PRIVATE-TOKEN", async () => {
  await using gitlab = startFakeGitLab();
  const receipt = await deliver(
    job("gitlab_comment", { payload: mergeRequestEvent, source: "gitlab" }),
    recordingContext(gitlab.env),
  );
  assert.deepEqual(receipt, { target: "gitlab_comment", parts: 1, destination: "1!1" });
  const [note] = gitlab.messages;
  assert.equal(note.path, "/api/v4/projects/1/merge_requests/1/notes");
  assert.equal(note.headers["private-token"], gitlab.token);
  assert.deepEqual(note.body, {
    body: "Build 42 failed on main\n\n<!-- posted by the agent webhook gateway -->",
  });
});

Deno.test("deliver() gitlab_comment posts a note on the issue of a note event", async () => {
  await using gitlab = startFakeGitLab();
  await deliver(job("gitlab_comment", { payload: noteOnIssue }), recordingContext(gitlab.env));
  assert.equal(gitlab.messages[0].path, "/api/v4/projects/5/issues/17/notes");
});

Deno.test("deliver() gitlab_comment URL-encodes a project path from the chat id", async () => {
  await using gitlab = startFakeGitLab({ known: ["group/sub/app"] });
  const receipt = await deliver(
    job("gitlab_comment", { chatId: "group/sub/app!12" }),
    recordingContext(gitlab.env),
  );
  assert.equal(receipt.destination, "group/sub/app!12");
  assert.equal(
    gitlab.messages[0].path,
    "/api/v4/projects/group%2Fsub%2Fapp/merge_requests/12/notes",
  );
  assert.equal(gitlab.messages[0].to, "group/sub/app!12");
});

Deno.test("deliver() gitlab_comment on a push payload fails permanently", async () => {
  await using gitlab = startFakeGitLab();
  const error = await targetError(
    deliver(
      job("gitlab_comment", { payload: pushEvent, eventLabel: "push" }),
      recordingContext(gitlab.env),
    ),
  );
  assert.equal(error.permanent, true);
  assert.match(error.message, /no merge request or issue in the "push" payload/);
  assert.equal(gitlab.requests, 0);
});

Deno.test("deliver() gitlab_comment waits out a 429 Retry-After given as plain text", async () => {
  await using gitlab = startFakeGitLab();
  gitlab.failNext(1, { status: 429, retryAfterSeconds: 6 });
  const ctx = recordingContext(gitlab.env);
  await deliver(job("gitlab_comment", { chatId: "1#2" }), ctx);
  assert.deepEqual(ctx.waits, [6000]);
  assert.equal(gitlab.messages.length, 1);
});

Deno.test("deliver() gitlab_comment with a wrong token is a permanent 401", async () => {
  await using gitlab = startFakeGitLab();
  const env = { ...gitlab.env, GITLAB_TOKEN: "glpat-wrong" };
  const error = await targetError(
    deliver(job("gitlab_comment", { chatId: "1#2" }), recordingContext(env)),
  );
  assert.equal(error.permanent, true);
  assert.equal(error.status, 401);
  assert.ok(!error.message.includes("glpat-wrong"));
});

Deno.test("deliver() gitlab_comment 503 is retryable", async () => {
  await using gitlab = startFakeGitLab();
  gitlab.failNext(1, { status: 503 });
  const error = await targetError(
    deliver(job("gitlab_comment", { chatId: "1#2" }), recordingContext(gitlab.env)),
  );
  assert.equal(error.permanent, false);
});

Deno.test("deliver() gitlab_comment without GITLAB_TOKEN names it", async () => {
  const error = await targetError(
    deliver(job("gitlab_comment", { chatId: "1#2" }), recordingContext({})),
  );
  assert.equal(error.permanent, true);
  assert.match(error.message, /GITLAB_TOKEN/);
});
