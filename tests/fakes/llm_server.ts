/**
 * A loopback OpenAI-compatible endpoint for tests: `POST /v1/chat/completions` only.
 *
 * It checks the Bearer key and the model, records every request, and answers with what the
 * test's `answer` function returns: a text (a normal completion), a completion whose message
 * and finish reason the test writes (a refusal, text parts, a cut-off answer), a body sent as
 * it is (a captive portal's HTML page), or a failure (an HTTP status with an optional
 * `Retry-After`, or a hang that ends only when the client gives up or the server closes).
 * A completion carries `usage` as OpenAI's does: one token per word of the messages and of the
 * answer, unless the test writes its own (or none).
 * Response shape:
 * https://platform.openai.com/docs/api-reference/chat/object
 *
 * @module
 */

/** One chat message as the client sent it. */
export interface FakeLlmMessage {
  role: string;
  content: string;
}

/** A request the fake received. */
export interface FakeLlmRequest {
  model: string;
  messages: FakeLlmMessage[];
  /** The `Authorization` header. */
  authorization: string | null;
  /** The whole JSON body. */
  body: Record<string, unknown>;
  /** The `usage` the fake answered it with, when it answered a completion that has one. */
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/** What the fake answers: a completion text, a completion as written, a raw body, or a failure. */
export type FakeLlmAnswer =
  | string
  | {
    /**
     * The first choice's `message` (role `assistant` is added) and `finish_reason`; `usage` as
     * sent, or null for a completion without one (@default {a word count})
     */
    completion: {
      message: Record<string, unknown>;
      finishReason: string;
      usage?: Record<string, unknown> | null;
    };
  }
  | {
    /** The body, sent as it is, with status 200 and this `Content-Type` (text/plain when absent). */
    raw: string;
    contentType?: string;
  }
  | { status: number; retryAfter?: string; message?: string }
  | { hang: true };

/** Options of {@link startFakeLlm}. */
export interface FakeLlmOptions {
  /** The accepted API key. @default {"test-key"} */
  apiKey?: string;
  /** The only model served; others get 404 `model_not_found`. @default {"test-model"} */
  model?: string;
  /**
   * The `model` a completion names, as OpenAI names a dated version of the one asked for
   * (`gpt-4o-mini-2024-07-18`). @default {`model`}
   */
  answeredModel?: string;
  /**
   * Decides each answer. @default echoes `"echo: " + <last user message>`
   * @param request the request, already recorded
   * @param index its position among the requests, from 0
   */
  answer?: (request: FakeLlmRequest, index: number) => FakeLlmAnswer | Promise<FakeLlmAnswer>;
}

/** A running fake. */
export interface FakeLlm {
  /** Base URL ending in `/v1`, for `baseURL` / `OPENAI_BASE_URL`. */
  url: string;
  /** Requests received so far (authorised or not), oldest first. */
  requests: FakeLlmRequest[];
  /** `OPENAI_BASE_URL`, `OPENAI_API_KEY` and `AGENT_MODEL` that point the gateway here. */
  env: Record<string, string>;
  /** Stops the server; requests left hanging get a 503. */
  close(): Promise<void>;
}

/**
 * Starts the fake on 127.0.0.1 and a free port.
 * @param options key, model and the answer function
 * @returns the running fake; close it at the end of the test
 */
export function startFakeLlm(options: FakeLlmOptions = {}): Promise<FakeLlm> {
  const apiKey = options.apiKey ?? "test-key";
  const model = options.model ?? "test-model";
  const answeredModel = options.answeredModel ?? model;
  const answer = options.answer ?? ((request) => `echo: ${lastUserMessage(request)}`);
  const requests: FakeLlmRequest[] = [];
  const shutdown = new AbortController();

  async function handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (request.method !== "POST" || url.pathname !== "/v1/chat/completions") {
      await request.body?.cancel();
      return error(404, "not_found", `No route ${request.method} ${url.pathname}`);
    }
    const body = await request.json() as Record<string, unknown>;
    const recorded: FakeLlmRequest = {
      model: String(body.model),
      messages: (body.messages ?? []) as FakeLlmMessage[],
      authorization: request.headers.get("authorization"),
      body,
    };
    const index = requests.push(recorded) - 1;
    if (recorded.authorization !== `Bearer ${apiKey}`) {
      return error(401, "invalid_api_key", "Incorrect API key provided");
    }
    if (recorded.model !== model) {
      return error(404, "model_not_found", `The model ${recorded.model} does not exist`);
    }
    const reply = await answer(recorded, index);
    if (typeof reply === "string") {
      const choice = { message: { content: reply }, finishReason: "stop" };
      return completion(answeredModel, {
        ...choice,
        usage: recorded.usage = wordCount(recorded, reply),
      });
    }
    if ("completion" in reply) {
      const { usage, message } = reply.completion;
      const counted = usage === undefined && typeof message.content === "string"
        ? recorded.usage = wordCount(recorded, message.content)
        : usage;
      return completion(answeredModel, { ...reply.completion, usage: counted });
    }
    if ("raw" in reply) {
      const headers = reply.contentType ? { "content-type": reply.contentType } : undefined;
      return new Response(reply.raw, { headers });
    }
    if ("hang" in reply) return await hang(request.signal, shutdown.signal);
    const headers = reply.retryAfter ? { "retry-after": reply.retryAfter } : undefined;
    return error(
      reply.status,
      "fake_error",
      reply.message ?? `fake status ${reply.status}`,
      headers,
    );
  }

  return new Promise((resolve) => {
    const server = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      signal: shutdown.signal,
      onListen: ({ port }) => {
        resolve({
          url: `http://127.0.0.1:${port}/v1`,
          requests,
          env: {
            OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`,
            OPENAI_API_KEY: apiKey,
            AGENT_MODEL: model,
          },
          close: async () => {
            shutdown.abort();
            await server.finished;
          },
        });
      },
    }, handle);
  });
}

function lastUserMessage(request: FakeLlmRequest): string {
  const users = request.messages.filter((message) => message.role === "user");
  return users.at(-1)?.content ?? "";
}

/** OpenAI's `usage` shape, counting one token per word of the messages and of the answer. */
function wordCount(
  request: FakeLlmRequest,
  answer: string,
): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
  const words = (text: string) => text.split(/\s+/).filter(Boolean).length;
  const prompt_tokens = request.messages.reduce(
    (sum, message) => sum + words(String(message.content)),
    0,
  );
  const completion_tokens = words(answer);
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

function completion(
  model: string,
  choice: {
    message: Record<string, unknown>;
    finishReason: string;
    usage?: Record<string, unknown> | null;
  },
): Response {
  return Response.json({
    id: `chatcmpl-${crypto.randomUUID()}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{
      index: 0,
      message: { role: "assistant", ...choice.message },
      finish_reason: choice.finishReason,
    }],
    ...(choice.usage ? { usage: choice.usage } : {}),
  });
}

function error(
  status: number,
  code: string,
  message: string,
  headers?: Record<string, string>,
): Response {
  return Response.json({ error: { message, type: code, code, param: null } }, {
    status,
    headers,
  });
}

/** Never answers until the client disconnects or the server closes. */
function hang(client: AbortSignal, server: AbortSignal): Promise<Response> {
  return new Promise((resolve) => {
    const done = () => resolve(error(503, "shutting_down", "fake server closed"));
    if (client.aborted || server.aborted) return done();
    client.addEventListener("abort", done, { once: true });
    server.addEventListener("abort", done, { once: true });
  });
}
