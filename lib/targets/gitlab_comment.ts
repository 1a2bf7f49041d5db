/**
 * The `gitlab_comment` target: a note on the merge request or issue of the event.
 * https://docs.gitlab.com/api/notes/#create-new-merge-request-note
 * https://docs.gitlab.com/api/notes/#create-new-issue-note
 * Payload shapes: https://docs.gitlab.com/user/project/integrations/webhook_events/
 *
 * @module
 */

import { TargetError } from "../errors.ts";
import { apiBase, checkTarget, requireToken } from "./_env.ts";
import { postJson } from "./_http.ts";
import { createdWithId, messageIdOf } from "./_platform_answers.ts";
import type { Target } from "./_target.ts";
import { asRecord, valueAt } from "../subscriptions/payload.ts";
import { OWN_COMMENT_MARKER } from "./own_comments.ts";

/** A merge request or issue: project (numeric id or `group/project` path), kind and iid. */
export interface GitLabItem {
  /** Numeric project id or `group/project` path (not yet URL-encoded). */
  project: string;
  /** The API collection: `merge_requests` or `issues`. */
  kind: "merge_requests" | "issues";
  /** Project-scoped id (`!12`, `#12`). */
  iid: number;
}

/** Where a GitLab note goes. */
export interface GitLabDestination extends GitLabItem {
  /** The bot or API token (never shown in messages). */
  token: string;
  /** API base URL without a trailing `/`. */
  baseUrl: string;
}

/**
 * Parses `<project>!<iid>` (merge request) or `<project>#<iid>` (issue), the project being a
 * numeric id or a path.
 * @param value the merge request or issue, as `--deliver-chat-id` gives it
 * @returns the project, the API collection and the iid
 * @throws {TargetError} permanent for anything else.
 */
export function parseGitLabItem(value: string): GitLabItem {
  const match = /^(.+)([!#])([1-9]\d*)$/.exec(value.trim());
  if (match === null) {
    throw new TargetError(
      `a GitLab merge request is written <project>!<iid> and an issue <project>#<iid>, got "${value}"`,
      { permanent: true },
    );
  }
  return {
    project: match[1],
    kind: match[2] === "!" ? "merge_requests" : "issues",
    iid: Number(match[3]),
  };
}

/** `group/project!12` for a merge request, `group/project#12` for an issue. */
function gitlabLabel({ project, kind, iid }: GitLabItem): string {
  return `${project}${kind === "merge_requests" ? "!" : "#"}${iid}`;
}

function positive(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value > 0 ? value : undefined;
}

/**
 * The merge request or issue a GitLab webhook payload is about: `project.id` with
 * `object_attributes.iid` for `merge_request` and `issue` events, `merge_request.iid` or
 * `issue.iid` for `note` events, and `merge_request.iid` for others (a merge request pipeline).
 * @param payload a GitLab webhook's parsed JSON body
 * @returns The item, or undefined for events that have none (`push`, `tag_push`, ...).
 */
export function gitlabItem(payload: unknown): GitLabItem | undefined {
  const id = valueAt(payload, "project.id");
  const path = valueAt(payload, "project.path_with_namespace");
  const project = positive(id)?.toString() ?? (typeof path === "string" ? path : undefined);
  if (project === undefined) return undefined;
  const kind = valueAt(payload, "object_kind");
  const own = positive(valueAt(payload, "object_attributes.iid"));
  if (kind === "merge_request" && own) return { project, kind: "merge_requests", iid: own };
  if (kind === "issue" && own) return { project, kind: "issues", iid: own };
  const mergeRequest = positive(valueAt(payload, "merge_request.iid"));
  if (mergeRequest) return { project, kind: "merge_requests", iid: mergeRequest };
  const issue = positive(valueAt(payload, "issue.iid"));
  if (kind === "note" && issue) return { project, kind: "issues", iid: issue };
  return undefined;
}

/**
 * Reads a 2xx answer: GitLab answers a created note (201) with the note, whose `id` is a
 * number; anything else (a proxy's login page) means nothing was posted, and is retryable.
 * https://docs.gitlab.com/api/notes/
 */
const inspect = createdWithId("a GitLab note", "number");

/** GitLab note, `GITLAB_TOKEN`, item from payload or `<project>!<iid>` / `<project>#<iid>`. */
export const gitlabComment: Target<GitLabDestination> = {
  name: "gitlab_comment",
  // Each part ends with the marker that keeps the gateway from answering its own comments.
  maxChars: 1_000_000 - OWN_COMMENT_MARKER.length,
  needs: "GITLAB_TOKEN",
  destination:
    "the merge request or issue of the payload, or --deliver-chat-id <project>!<iid> / <project>#<iid>",
  resolve(job, ctx) {
    const token = requireToken(ctx.env, ["GITLAB_TOKEN"], "gitlab_comment");
    const item = job.chatId?.trim() ? parseGitLabItem(job.chatId) : gitlabItem(job.payload);
    if (item === undefined) {
      throw new TargetError(
        `The gitlab_comment target found no merge request or issue in the "${job.eventLabel}" payload (project.id with object_attributes.iid); set --deliver-chat-id <project>!<iid>`,
        { permanent: true },
      );
    }
    const baseUrl = apiBase(ctx.env, "GITLAB_URL", "https://gitlab.com");
    return { label: gitlabLabel(item), destination: { ...item, token, baseUrl } };
  },
  async send({ project, kind, iid, token, baseUrl }, { text }, ctx) {
    const noun = kind === "merge_requests" ? "merge request" : "issue";
    // A note's answer has no link to it, only its id.
    const answer = await postJson(ctx, {
      platform: "GitLab",
      action: `note on ${noun} ${gitlabLabel({ project, kind, iid })}`,
      // A path project id is one URL segment: `group/project` becomes `group%2Fproject`.
      url: `${baseUrl}/api/v4/projects/${encodeURIComponent(project)}/${kind}/${iid}/notes`,
      headers: { "PRIVATE-TOKEN": token },
      body: { body: text + OWN_COMMENT_MARKER },
      secret: token,
      inspect,
    });
    return { messageId: messageIdOf(asRecord(answer)?.id) };
  },
  check(options) {
    return checkTarget(options, {
      target: "gitlab_comment",
      tokens: ["GITLAB_TOKEN"],
      parse: parseGitLabItem,
    });
  },
};
