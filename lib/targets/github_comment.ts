/**
 * The `github_comment` target: a comment on the issue or pull request of the event (pull
 * requests are issues for comments), through the REST API.
 * https://docs.github.com/en/rest/issues/comments#create-an-issue-comment
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

/** An issue or pull request: `owner/repo` and its number. */
export interface GitHubItem {
  /** `owner/repo`. */
  repo: string;
  /** Issue or pull request number. */
  number: number;
}

/** Where a GitHub comment goes. */
export interface GitHubDestination extends GitHubItem {
  /** The bot or API token (never shown in messages). */
  token: string;
  /** API base URL without a trailing `/`. */
  baseUrl: string;
}

const TOKENS = ["GITHUB_TOKEN", "GH_TOKEN"] as const;

/**
 * Parses `owner/repo#123`.
 * @param value the issue or pull request, as `--deliver-chat-id` gives it
 * @returns the repository and the number
 * @throws {TargetError} permanent for anything else.
 */
export function parseGitHubItem(value: string): GitHubItem {
  const match = /^([^#\s]+)#([1-9]\d*)$/.exec(value.trim());
  if (match === null || !isRepoName(match[1])) {
    throw new TargetError(
      `a GitHub issue or pull request is written owner/repo#123, got "${value}"`,
      {
        permanent: true,
      },
    );
  }
  return { repo: match[1], number: Number(match[2]) };
}

/**
 * True for a GitHub `owner/repo` name: owner letters, digits and `-`; repo letters, digits,
 * `.`, `_` and `-`, but not `.` or `..` (which would climb the API path).
 * @param value the text to check
 * @returns whether it is a repository name that is safe in an API path
 */
export function isRepoName(value: string): boolean {
  const match = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/([A-Za-z0-9._-]{1,100})$/.exec(value);
  return match !== null && match[1] !== "." && match[1] !== "..";
}

/**
 * The issue or pull request a GitHub webhook payload is about: `repository.full_name` with
 * `issue.number` (issues, issue comments), `pull_request.number` (pull requests, reviews) or
 * `number`.
 *
 * @returns The item, or undefined for events that have none (`push`, `release`, ...).
 */
export function githubItem(payload: unknown): GitHubItem | undefined {
  const repo = valueAt(payload, "repository.full_name");
  // The payload chooses the API path we call with the bot token: only a real owner/repo.
  if (typeof repo !== "string" || !isRepoName(repo)) return undefined;
  for (const path of ["issue.number", "pull_request.number", "number"]) {
    const number = valueAt(payload, path);
    if (typeof number === "number" && Number.isInteger(number) && number > 0) {
      return { repo, number };
    }
  }
  return undefined;
}

/**
 * Reads a 2xx answer: GitHub answers a created comment (201) with the comment, whose `id` is a
 * number; anything else (a proxy's login page) means nothing was posted, and is retryable.
 * https://docs.github.com/en/rest/issues/comments#create-an-issue-comment
 */
const inspect = createdWithId("a GitHub comment", "number");

/** GitHub comment, `GITHUB_TOKEN` or `GH_TOKEN`, item from payload or `owner/repo#123`. */
export const githubComment: Target<GitHubDestination> = {
  name: "github_comment",
  // Each part ends with the marker that keeps the gateway from answering its own comments.
  maxChars: 65536 - OWN_COMMENT_MARKER.length,
  needs: "GITHUB_TOKEN (or GH_TOKEN)",
  destination: "the issue or pull request of the payload, or --deliver-chat-id owner/repo#123",
  resolve(job, ctx) {
    const token = requireToken(ctx.env, TOKENS, "github_comment");
    const item = job.chatId?.trim() ? parseGitHubItem(job.chatId) : githubItem(job.payload);
    if (item === undefined) {
      throw new TargetError(
        `The github_comment target found no issue or pull request in the "${job.eventLabel}" payload (repository.full_name with issue.number, pull_request.number or number); set --deliver-chat-id owner/repo#123`,
        { permanent: true },
      );
    }
    const baseUrl = apiBase(ctx.env, "GITHUB_API_URL", "https://api.github.com");
    return { label: `${item.repo}#${item.number}`, destination: { ...item, token, baseUrl } };
  },
  async send({ repo, number, token, baseUrl }, { text }, ctx) {
    const answer = await postJson(ctx, {
      platform: "GitHub",
      action: `comment on ${repo}#${number}`,
      url: `${baseUrl}/repos/${repo}/issues/${number}/comments`,
      headers: {
        Authorization: `Bearer ${token}`,
        Accept: "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
        "User-Agent": "agent-gateway",
      },
      body: { body: text + OWN_COMMENT_MARKER },
      secret: token,
      inspect,
    });
    const comment = asRecord(answer);
    const url = comment?.html_url;
    return {
      messageId: messageIdOf(comment?.id),
      ...(typeof url === "string" && /^https?:\/\//.test(url) ? { url } : {}),
    };
  },
  check(options) {
    return checkTarget(options, {
      target: "github_comment",
      tokens: TOKENS,
      parse: parseGitHubItem,
    });
  },
};
