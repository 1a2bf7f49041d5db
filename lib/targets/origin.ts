/**
 * The `origin` target: reply where the event came from. A GitHub event about an issue or pull
 * request gets a `github_comment`, a GitLab event about a merge request or issue a
 * `gitlab_comment`; anything else (a push, a Stripe or monitoring event) goes to `extra.home`
 * (`telegram:123456`, `slack:C0123`, ...). With no home either, the delivery fails and says why.
 *
 * @module
 */

import { TargetError } from "../errors.ts";
import { githubItem } from "./github_comment.ts";
import { gitlabItem } from "./gitlab_comment.ts";
import type { DeliveryJob, Redirect, Target } from "./_target.ts";

/**
 * Parses `extra.home`: a target name, then optionally `:` and its chat id
 * (`telegram:-1001234:7` is telegram with chat id `-1001234:7`).
 * @param home the setting as written
 * @returns the target's name and the chat id, if any; both trimmed
 */
export function parseHome(home: string): { target: string; chatId?: string } {
  const at = home.indexOf(":");
  if (at < 0) return { target: home.trim() };
  const chatId = home.slice(at + 1).trim();
  return { target: home.slice(0, at).trim(), chatId: chatId === "" ? undefined : chatId };
}

/** The redirect that answers the sender itself, or why it cannot be answered. */
function fromSender(job: DeliveryJob): Redirect | string {
  if (job.source === "github") {
    if (githubItem(job.payload)) return { redirect: { target: "github_comment" } };
    return `the GitHub "${job.eventLabel}" event has no issue or pull request to comment on`;
  }
  if (job.source === "gitlab") {
    if (gitlabItem(job.payload)) return { redirect: { target: "gitlab_comment" } };
    return `the GitLab "${job.eventLabel}" event has no merge request or issue to comment on`;
  }
  return `events from "${job.source}" senders have no place to reply to`;
}

/** Redirects to `github_comment`, `gitlab_comment` or `extra.home`; never sends itself. */
export const origin: Target<never> = {
  name: "origin",
  needs: "the token of the target it picks",
  destination:
    "GitHub issue/PR → github_comment, GitLab MR/issue → gitlab_comment, else extra.home",
  resolve(job, ctx) {
    const sender = fromSender(job);
    if (typeof sender !== "string") return sender;
    const home = ctx.homeTarget?.trim();
    if (!home) {
      throw new TargetError(
        `deliver=origin: ${sender}, and no home target is configured (platforms.webhook.extra.home, e.g. telegram:123456)`,
        { permanent: true },
      );
    }
    const { target, chatId } = parseHome(home);
    if (target === "origin") {
      throw new TargetError(`deliver=origin: extra.home cannot be "origin" itself`, {
        permanent: true,
      });
    }
    return { redirect: { target, chatId } };
  },
  send() {
    return Promise.reject(new TargetError("origin redirects and never sends", { permanent: true }));
  },
};
