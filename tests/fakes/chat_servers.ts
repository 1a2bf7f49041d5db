/**
 * Loopback servers that play Telegram, Discord, Slack, GitHub and GitLab for tests. Each checks
 * what the real API checks (path, token, required fields, the length limit) and answers in the
 * real API's shapes, records the messages it accepted, and can be told to answer 429 or 5xx
 * for the next requests. The Telegram fake reads the HTML `parse_mode` as strictly as its
 * documentation states (`telegram_entities.ts`) and refuses what breaks it, as Telegram does.
 *
 * ```ts
 * await using telegram = startFakeTelegram();
 * const env = { ...telegram.env, TELEGRAM_HOME_CHANNEL: "123" };
 * // ... deliver, then:
 * assert.equal(telegram.messages[0].text, "hello");
 * ```
 *
 * @module
 */

import { parseTelegramHtml } from "./telegram_entities.ts";

/** The platforms a fake can play. */
export type PlatformKind = "telegram" | "discord" | "slack" | "github" | "gitlab";

/** One message a fake accepted. */
export interface ReceivedMessage {
  /** Request path (`/bot<token>/sendMessage`, `/api/v10/channels/1/messages`, ...). */
  path: string;
  /** Chat id, channel, `owner/repo#12`, `group/project!3` or `42#7` (GitLab issue). */
  to: string;
  /** The message text (`text`, `content` or `body`). */
  text: string;
  /** Telegram with `parse_mode: "HTML"`: the text a reader sees, tags removed and entities read. */
  shown?: string;
  /** Telegram `message_thread_id` or Slack `thread_ts`, as a string. */
  thread?: string;
  /** The whole JSON request body. */
  body: Record<string, unknown>;
  /** The request headers (lowercase names). */
  headers: Record<string, string>;
}

/** A failure to answer instead of processing: 429 (with a wait), 5xx, or a Telegram 400. */
export interface PlannedFailure {
  /** HTTP status to answer: 429, 403 (GitHub rate limit), 400 (Telegram) or 5xx. */
  status: number;
  /** Seconds in the platform's 429 shape (`retry_after`, `Retry-After`). */
  retryAfterSeconds?: number;
  /** Telegram: the `description` of the answer, such as "Bad Request: can't parse entities: ...". */
  description?: string;
}

/** A running fake platform. `await using` closes it. */
export interface FakePlatform extends AsyncDisposable {
  /** Which platform it plays. */
  kind: PlatformKind;
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** The token it accepts. */
  token: string;
  /** The API URL and token variables that point the gateway here (`TELEGRAM_API_URL`, ...). */
  env: Record<string, string>;
  /** Accepted messages, in order. */
  messages: ReceivedMessage[];
  /** Every request received, accepted or not. */
  requests: number;
  /**
   * Answers the next `count` requests with `failure` instead of processing them; with
   * `after`, only once that many more requests have been processed normally.
   */
  failNext(count: number, failure: PlannedFailure, options?: { after?: number }): void;
  /** Stops the server and waits until it is closed. */
  close(): Promise<void>;
}

/** Options of a fake. */
export interface FakeOptions {
  /** The token to accept. @default {"<kind>-test-token"} */
  token?: string;
  /** Only these chats/channels/repos/projects exist; others get the platform's "not found". */
  known?: string[];
  /**
   * Telegram: groups upgraded to supergroups, old chat id → new one. A message to an old id
   * gets Telegram's 400 "group chat was upgraded to a supergroup chat" with the new id in
   * `parameters.migrate_to_chat_id`; the new id is a chat that exists.
   */
  upgradedChats?: Record<string, number>;
}

type Answer = { status: number; body: unknown; headers?: Record<string, string> };
type Request = {
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  token: string;
  known?: string[];
  upgradedChats?: Record<string, number>;
  record: (message: Omit<ReceivedMessage, "path" | "headers" | "body">) => number;
};
interface Platform {
  env(url: string, token: string): Record<string, string>;
  handle(request: Request): Answer;
  fail(failure: PlannedFailure): Answer;
}

const json = (status: number, body: unknown, headers?: Record<string, string>): Answer => ({
  status,
  body,
  headers,
});
const isKnown = (request: Request, name: string) =>
  request.known === undefined || request.known.includes(name);
const text = (value: unknown) => (typeof value === "string" ? value : undefined);

/**
 * Telegram Bot API: token in the path, `chat_id` and `text` required, 4,096 characters after
 * entities parsing; `parse_mode` `HTML` read strictly.
 */
const telegram: Platform = {
  env: (url, token) => ({ TELEGRAM_API_URL: url, TELEGRAM_BOT_TOKEN: token }),
  handle(request) {
    const error = (status: number, description: string) =>
      json(status, { ok: false, error_code: status, description });
    const match = /^\/bot([^/]+)\/sendMessage$/.exec(request.path);
    if (match === null) return error(404, "Not Found");
    if (match[1] !== request.token) return error(401, "Unauthorized");
    const { chat_id: chat, message_thread_id: thread, parse_mode: parseMode } = request.body;
    const message = text(request.body.text);
    if (chat === undefined || chat === "") return error(400, "Bad Request: chat_id is empty");
    let shown = message;
    if (parseMode !== undefined && message) {
      if (parseMode !== "HTML") return error(400, `Bad Request: unsupported parse_mode`);
      const parsed = parseTelegramHtml(message);
      if ("error" in parsed) {
        return error(400, `Bad Request: can't parse entities: ${parsed.error}`);
      }
      shown = parsed.text;
    }
    if (!shown?.trim()) return error(400, "Bad Request: message text is empty");
    if (shown.length > 4096) return error(400, "Bad Request: message is too long");
    if (thread !== undefined && !Number.isInteger(thread)) {
      return error(400, "Bad Request: message thread not found");
    }
    const migratedTo = request.upgradedChats?.[String(chat)];
    if (migratedTo !== undefined) {
      return json(400, {
        ok: false,
        error_code: 400,
        description: "Bad Request: group chat was upgraded to a supergroup chat",
        parameters: { migrate_to_chat_id: migratedTo },
      });
    }
    const upgradedTo = Object.values(request.upgradedChats ?? {}).map(String);
    if (!isKnown(request, String(chat)) && !upgradedTo.includes(String(chat))) {
      return error(400, "Bad Request: chat not found");
    }
    const id = request.record({
      to: String(chat),
      text: message!,
      ...(parseMode === undefined ? {} : { shown }),
      thread: thread === undefined ? undefined : String(thread),
    });
    return json(200, { ok: true, result: { message_id: id, chat: { id: chat }, text: shown } });
  },
  fail: ({ status, retryAfterSeconds, description }) =>
    json(status, {
      ok: false,
      error_code: status,
      description: description ?? (status === 429
        ? `Too Many Requests: retry after ${retryAfterSeconds ?? 1}`
        : "Internal Server Error"),
      ...(status === 429 ? { parameters: { retry_after: retryAfterSeconds ?? 1 } } : {}),
    }),
};

/** Discord REST v10: `Authorization: Bot <token>`, `content` required, 2,000 characters. */
const discord: Platform = {
  env: (url, token) => ({ DISCORD_API_URL: `${url}/api/v10`, DISCORD_BOT_TOKEN: token }),
  handle(request) {
    const match = /^\/api\/v10\/channels\/(\d+)\/messages$/.exec(request.path);
    if (match === null) return json(404, { message: "404: Not Found", code: 0 });
    if (request.headers.authorization !== `Bot ${request.token}`) {
      return json(401, { message: "401: Unauthorized", code: 0 });
    }
    const content = text(request.body.content);
    if (!content) return json(400, { message: "Cannot send an empty message", code: 50006 });
    if (content.length > 2000) {
      const errors = {
        content: {
          _errors: [{ code: "BASE_TYPE_MAX_LENGTH", message: "Must be 2000 or fewer in length." }],
        },
      };
      return json(400, { message: "Invalid Form Body", code: 50035, errors });
    }
    if (!isKnown(request, match[1])) return json(404, { message: "Unknown Channel", code: 10003 });
    const id = request.record({ to: match[1], text: content });
    return json(200, { id: String(id), channel_id: match[1], content });
  },
  fail: ({ status, retryAfterSeconds = 1 }) =>
    status === 429
      ? json(
        429,
        { message: "You are being rate limited.", retry_after: retryAfterSeconds, global: false },
        { "Retry-After": String(Math.ceil(retryAfterSeconds)) },
      )
      : json(status, { message: "Internal Server Error", code: 0 }),
};

/**
 * Slack Web API `chat.postMessage`: Bearer token, answers 200 with `ok: false` and an error
 * code. The real limit is 40,000 characters; this fake refuses above the 4,000 the gateway uses.
 */
const slack: Platform = {
  env: (url, token) => ({ SLACK_API_URL: `${url}/api`, SLACK_BOT_TOKEN: token }),
  handle(request) {
    const error = (code: string) => json(200, { ok: false, error: code });
    if (request.path !== "/api/chat.postMessage") return json(404, "Not Found");
    const auth = request.headers.authorization;
    if (auth === undefined) return error("not_authed");
    if (auth !== `Bearer ${request.token}`) return error("invalid_auth");
    const channel = text(request.body.channel);
    const message = text(request.body.text);
    if (!channel || !isKnown(request, channel)) return error("channel_not_found");
    if (!message) return error("no_text");
    if (message.length > 4000) return error("msg_too_long");
    const threadTs = text(request.body.thread_ts);
    const id = request.record({ to: channel, text: message, thread: threadTs });
    const ts = `1700000000.${String(id).padStart(6, "0")}`;
    return json(200, {
      ok: true,
      channel,
      ts,
      message: { text: message, ts, thread_ts: threadTs },
    });
  },
  fail: ({ status, retryAfterSeconds = 1 }) =>
    status === 429
      ? json(429, { ok: false, error: "ratelimited" }, { "Retry-After": String(retryAfterSeconds) })
      : json(status, { ok: false, error: "internal_error" }),
};

/** GitHub REST issue comments: User-Agent and token required, `body` ≤ 65,536 characters. */
const github: Platform = {
  env: (url, token) => ({ GITHUB_API_URL: url, GITHUB_TOKEN: token }),
  handle(request) {
    const match = /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/comments$/.exec(request.path);
    if (match === null) return json(404, { message: "Not Found" });
    if (!request.headers["user-agent"]) {
      return json(403, { message: "Request forbidden by administrative rules." });
    }
    const auth = request.headers.authorization;
    if (auth !== `Bearer ${request.token}` && auth !== `token ${request.token}`) {
      return json(401, { message: "Bad credentials" });
    }
    if (!isKnown(request, match[1])) return json(404, { message: "Not Found" });
    const body = text(request.body.body);
    if (body === undefined) {
      return json(422, { message: `Invalid request.\n\n"body" wasn't supplied.` });
    }
    if (body.length > 65536) {
      const errors = [{
        resource: "IssueComment",
        code: "unprocessable",
        field: "data",
        message: "Body is too long (maximum is 65536 characters)",
      }];
      return json(422, { message: "Validation Failed", errors });
    }
    const id = request.record({ to: `${match[1]}#${match[2]}`, text: body });
    const htmlUrl = `https://github.com/${match[1]}/issues/${match[2]}#issuecomment-${id}`;
    return json(201, { id, html_url: htmlUrl, body });
  },
  fail: ({ status, retryAfterSeconds = 60 }) =>
    status === 429 || status === 403
      ? json(
        status,
        { message: "You have exceeded a secondary rate limit." },
        { "Retry-After": String(retryAfterSeconds), "X-RateLimit-Remaining": "0" },
      )
      : json(status, { message: "Server Error" }),
};

/** GitLab notes: `PRIVATE-TOKEN`, `body` required, 1,000,000 characters. */
const gitlab: Platform = {
  env: (url, token) => ({ GITLAB_URL: url, GITLAB_TOKEN: token }),
  handle(request) {
    const match = /^\/api\/v4\/projects\/([^/]+)\/(merge_requests|issues)\/(\d+)\/notes$/.exec(
      request.path,
    );
    if (match === null) return json(404, { error: "404 Not Found" });
    if (request.headers["private-token"] !== request.token) {
      return json(401, { message: "401 Unauthorized" });
    }
    const project = decodeURIComponent(match[1]);
    if (!isKnown(request, project)) return json(404, { message: "404 Project Not Found" });
    const body = text(request.body.body);
    if (!body) return json(400, { error: "body is missing" });
    if (body.length > 1_000_000) {
      return json(400, { message: { note: ["is too long (maximum is 1000000 characters)"] } });
    }
    const mergeRequest = match[2] === "merge_requests";
    const id = request.record({
      to: `${project}${mergeRequest ? "!" : "#"}${match[3]}`,
      text: body,
    });
    const noteableType = mergeRequest ? "MergeRequest" : "Issue";
    return json(201, { id, body, noteable_type: noteableType, noteable_iid: Number(match[3]) });
  },
  fail: ({ status, retryAfterSeconds = 1 }) =>
    status === 429
      ? { status, body: "Retry later", headers: { "Retry-After": String(retryAfterSeconds) } }
      : json(status, { message: `${status} Internal Server Error` }),
};

const PLATFORMS: Record<PlatformKind, Platform> = { telegram, discord, slack, github, gitlab };

/**
 * Starts a fake platform on 127.0.0.1 with a free port.
 * @param kind Which platform to play.
 * @param options Token to accept and, optionally, the only chats or repositories that exist.
 * @returns The running fake; close it with `close()` or `await using`.
 */
export function startFakePlatform(kind: PlatformKind, options: FakeOptions = {}): FakePlatform {
  const platform = PLATFORMS[kind];
  const token = options.token ?? `${kind}-test-token`;
  // What to do with the coming requests, in order: fail, or (undefined) process normally.
  const failures: (PlannedFailure | undefined)[] = [];
  const fake = { kind, token, messages: [] as ReceivedMessage[], requests: 0 };
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    fake.requests++;
    const raw = await req.text();
    const failure = failures.shift();
    const path = new URL(req.url).pathname;
    let answer: Answer;
    if (failure !== undefined) answer = platform.fail(failure);
    else if (req.method !== "POST") answer = json(405, { message: "Method Not Allowed" });
    else {
      const headers = Object.fromEntries(req.headers);
      const body = parseObject(raw);
      const record = (message: Omit<ReceivedMessage, "path" | "headers" | "body">) =>
        fake.messages.push({ ...message, path, headers, body });
      const { known, upgradedChats } = options;
      answer = platform.handle({ path, headers, body, token, known, upgradedChats, record });
    }
    const responseBody = typeof answer.body === "string"
      ? answer.body
      : JSON.stringify(answer.body);
    const contentType = typeof answer.body === "string" ? "text/plain" : "application/json";
    return new Response(responseBody, {
      status: answer.status,
      headers: { "Content-Type": contentType, ...answer.headers },
    });
  });
  const url = `http://127.0.0.1:${server.addr.port}`;
  const close = () => server.shutdown();
  return Object.assign(fake, {
    url,
    env: platform.env(url, token),
    failNext: (count: number, failure: PlannedFailure, { after = 0 } = {}) => {
      for (let i = 0; i < after; i++) failures.push(undefined);
      for (let i = 0; i < count; i++) failures.push(failure);
    },
    close,
    [Symbol.asyncDispose]: close,
  });
}

function parseObject(raw: string): Record<string, unknown> {
  try {
    const value = JSON.parse(raw);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? value : {};
  } catch {
    return {};
  }
}

/** A fake Telegram Bot API (`TELEGRAM_API_URL`). */
export const startFakeTelegram = (options?: FakeOptions): FakePlatform =>
  startFakePlatform("telegram", options);
/** A fake Discord REST API (`DISCORD_API_URL`, served under `/api/v10`). */
export const startFakeDiscord = (options?: FakeOptions): FakePlatform =>
  startFakePlatform("discord", options);
/** A fake Slack Web API (`SLACK_API_URL`, served under `/api`). */
export const startFakeSlack = (options?: FakeOptions): FakePlatform =>
  startFakePlatform("slack", options);
/** A fake GitHub REST API (`GITHUB_API_URL`). */
export const startFakeGitHub = (options?: FakeOptions): FakePlatform =>
  startFakePlatform("github", options);
/** A fake GitLab instance (`GITLAB_URL`, API under `/api/v4`). */
export const startFakeGitLab = (options?: FakeOptions): FakePlatform =>
  startFakePlatform("gitlab", options);
