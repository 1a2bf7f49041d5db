/**
 * The gateway's own comments. A comment it posts on a GitHub issue or a GitLab merge request
 * makes the forge send an `issue_comment` (GitHub) or Note Hook (GitLab) event for it, and a
 * subscription that answers comments with a comment would answer itself for ever, an agent run
 * and a comment per round. So every comment the gateway posts ends with
 * {@link OWN_COMMENT_MARKER}, an HTML comment that GitHub and GitLab do not render, and the
 * ingest path ignores an event about such a comment when its subscription posts comments.
 *
 * @module
 */

import { valueAt } from "../subscriptions/payload.ts";

/** Ends every comment the gateway posts; invisible in rendered Markdown. */
export const OWN_COMMENT_MARKER = "\n\n<!-- posted by the agent webhook gateway -->";

/** The `deliver` values that post comments on the forge an event came from. */
const COMMENT_TARGETS = new Set(["github_comment", "gitlab_comment", "origin"]);

/**
 * True when a target may post a comment where events come from.
 * @param target a subscription's `deliver` value (`origin` replies with a comment to forge events)
 */
export function postsComments(target: string): boolean {
  return COMMENT_TARGETS.has(target);
}

/**
 * True when a payload is about a comment the gateway posted: the body of a GitHub comment
 * (`comment.body`: issue, pull request review and commit comments) or of a GitLab note
 * (`object_attributes.note` of a Note Hook) ends with {@link OWN_COMMENT_MARKER}, as it was
 * posted or after an edit that kept it there. A person's comment that quotes the marker
 * elsewhere is not one.
 * @param payload the parsed JSON payload of any event
 */
export function isOwnComment(payload: unknown): boolean {
  for (const path of ["comment.body", "object_attributes.note"]) {
    const body = valueAt(payload, path);
    if (typeof body === "string" && body.trimEnd().endsWith(MARKER_TEXT)) return true;
  }
  return false;
}

/** The marker without the blank line before it, which a forge may store as `\r\n`. */
const MARKER_TEXT = OWN_COMMENT_MARKER.trim();
