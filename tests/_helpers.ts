/**
 * Shared test helpers: temporary home folders, a fake command context, and running `main.ts`
 * as a subprocess (the real CLI and the real gateway).
 *
 * @module
 */
import { createHmac } from "node:crypto";
import { join } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import type { CommandContext } from "../commands/mod.ts";

/** The project root. */
export const ROOT = new URL("..", import.meta.url).pathname;
/** `main.ts`, for subprocess tests. */
export const MAIN = join(ROOT, "main.ts");

/**
 * A POST of `payload` as JSON, signed with `secret` as GitHub signs it (by octokit).
 * @param options `event` (`X-GitHub-Event`, @default {"issues"}), `delivery`
 *   (`X-GitHub-Delivery`, @default a fresh UUID)
 */
export function signedGitHub(
  secret: string,
  payload: unknown,
  options: { event?: string; delivery?: string } = {},
): Promise<RequestInit> {
  return signedGitHubBody(secret, JSON.stringify(payload), options);
}

/**
 * A POST of `body` as it is (malformed JSON and an empty body included), signed with `secret`
 * as GitHub signs it: by octokit, or by `node:crypto` for the empty body octokit refuses.
 * @param options as for {@link signedGitHub}
 */
export async function signedGitHubBody(
  secret: string,
  body: string,
  options: { event?: string; delivery?: string } = {},
): Promise<RequestInit> {
  return {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": options.event ?? "issues",
      "x-github-delivery": options.delivery ?? crypto.randomUUID(),
      "x-hub-signature-256": body === ""
        ? `sha256=${createHmac("sha256", secret).update("").digest("hex")}`
        : await sign(secret, body),
    },
    body,
  };
}

/** A POST of a small `issues.opened` event signed with `secret`, with a fresh delivery id. */
export function signedIssue(secret: string): Promise<RequestInit> {
  return signedGitHub(secret, { action: "opened", issue: { number: 1 } });
}

/** A temporary `AGENT_HOME` that removes itself. */
export async function tempHome(
  options: { config?: string; env?: string } = {},
): Promise<{ home: string } & AsyncDisposable> {
  const home = await Deno.makeTempDir({ prefix: "agent-home-" });
  if (options.config !== undefined) {
    await Deno.writeTextFile(join(home, "config.yaml"), options.config);
  }
  if (options.env !== undefined) await Deno.writeTextFile(join(home, ".env"), options.env);
  return {
    home,
    [Symbol.asyncDispose]: () => Deno.remove(home, { recursive: true }).catch(() => {}),
  };
}

/** A minimal config.yaml that enables the platform on `port`. */
export function enabledConfig(port = 8644, extra = ""): string {
  return `platforms:\n  webhook:\n    enabled: true\n    extra:\n      host: 127.0.0.1\n      port: ${port}\n${extra}`;
}

/** A command context whose output is captured and whose input is scripted. */
export function fakeContext(
  env: Record<string, string | undefined>,
  options: { input?: string[]; fetch?: typeof fetch; now?: () => number; terminal?: boolean } = {},
): CommandContext & { out: string[]; err: string[]; output(): string } {
  const out: string[] = [];
  const err: string[] = [];
  const input = [...(options.input ?? [])];
  return {
    env: { HOME: "/nonexistent", ...env },
    out,
    err,
    output: () => out.join("\n"),
    stdout: (text) => out.push(text),
    stderr: (text) => err.push(text),
    readLine: (question) => {
      out.push(question);
      return Promise.resolve(input.length ? input.shift()! : null);
    },
    isTerminal: options.terminal ?? false,
    fetch: options.fetch ?? fetch,
    now: options.now ?? Date.now,
    shutdownSignal: new AbortController().signal,
  };
}

/** What a finished subprocess printed. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Environment for subprocesses: no inherited AGENT_/WEBHOOK_/DASHBOARD_ variables, no colour,
 * and DASHBOARD_PORT 0 unless `extra` sets it, so that gateways run at once never contend for the
 * dashboard's default port.
 */
export function cleanEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(Deno.env.toObject())) {
    if (!/^(AGENT|WEBHOOK|DASHBOARD|OPENAI|TELEGRAM|DISCORD|SLACK|GITHUB|GH|GITLAB)_/.test(key)) {
      env[key] = value;
    }
  }
  return { ...env, NO_COLOR: "1", RUST_BACKTRACE: "0", DASHBOARD_PORT: "0", ...extra };
}

/**
 * Runs `deno run -A main.ts <args>` to completion.
 * @param args CLI arguments
 * @param env extra environment (AGENT_HOME at least)
 */
export function runCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  return runProgram(Deno.execPath(), ["run", "--allow-all", "--quiet", MAIN, ...args], {
    env: cleanEnv(env),
  });
}

/**
 * Runs a program to completion, in an environment of `env` alone, and decodes what it printed.
 * @param program the program's path
 * @param args its arguments
 * @param options `env`: its whole environment; `cwd`: where it runs (@default {this process's})
 */
export async function runProgram(
  program: string,
  args: string[],
  options: { env: Record<string, string>; cwd?: string },
): Promise<CliResult> {
  const output = await new Deno.Command(program, {
    args,
    cwd: options.cwd,
    env: options.env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/** A gateway process started with `main.ts gateway run`. */
export interface GatewayProcess extends AsyncDisposable {
  url: string;
  child: Deno.ChildProcess;
  /** Everything printed so far. */
  output(): string;
  /** Sends a signal and waits for the exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
}

/**
 * Starts `main.ts gateway run` and waits for its "listening on" line (with `--no-ingest`, its
 * "running the worker only" line, and `url` is "").
 * @param env AGENT_HOME and the rest; WEBHOOK_PORT defaults to 0 (a free port)
 * @param args more arguments of `gateway run`
 * @param options `maxOpenFiles`: the process's file-descriptor limit (`ulimit -n`)
 * @throws Error with the process output when it does not start within 30 s
 */
export async function startGatewayProcess(
  env: Record<string, string>,
  args: string[] = [],
  options: { maxOpenFiles?: number } = {},
): Promise<GatewayProcess> {
  const child = spawnGateway(env, args, options);
  const output = collectOutput(child);
  const listening = Promise.withResolvers<string>();
  output.onText((text) => {
    const match = text.match(/listening on (http:\/\/\S+)/);
    if (match) listening.resolve(match[1]);
    else if (text.includes("running the worker only")) listening.resolve(""); // --no-ingest
  });
  const timer = setTimeout(
    () => listening.reject(new Error(`gateway did not start:\n${output.text()}`)),
    30_000,
  );
  child.status.then((s) =>
    listening.reject(new Error(`gateway exited ${s.code}:\n${output.text()}`))
  );
  let stopped: Promise<number> | undefined;
  const stop = (signal: Deno.Signal = "SIGTERM") => {
    stopped ??= (async () => {
      try {
        child.kill(signal);
      } catch { /* already exited */ }
      const status = await child.status;
      await output.done;
      return status.code;
    })();
    return stopped;
  };
  try {
    const url = await listening.promise;
    return {
      url,
      child,
      output: output.text,
      stop,
      [Symbol.asyncDispose]: async () => void await stop(),
    };
  } catch (error) {
    await stop("SIGKILL");
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Spawns `main.ts gateway run`, under `ulimit -n` when `maxOpenFiles` is given.
 * @param env AGENT_HOME and the rest; WEBHOOK_PORT defaults to 0 (a free port)
 * @param args more arguments of `gateway run`
 */
function spawnGateway(
  env: Record<string, string>,
  args: string[],
  options: { maxOpenFiles?: number },
): Deno.ChildProcess {
  const deno = [Deno.execPath(), "run", "--allow-all", "--quiet", MAIN, "gateway", "run", ...args];
  const command = options.maxOpenFiles === undefined
    ? deno
    : ["sh", "-c", `ulimit -n ${options.maxOpenFiles} && exec "$@"`, "sh", ...deno];
  return new Deno.Command(command[0], {
    args: command.slice(1),
    env: cleanEnv({ WEBHOOK_PORT: "0", ...env }),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/**
 * Reads a process's standard output and error into one text as they come.
 * @returns `text()`: everything printed so far; `onText`: called with it after each chunk;
 *   `done`: settles once both streams have ended
 */
function collectOutput(child: Deno.ChildProcess) {
  let text = "";
  const listeners: ((text: string) => void)[] = [];
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) {
      text += decoder.decode(chunk, { stream: true });
      for (const listener of listeners) listener(text);
    }
  };
  return {
    text: () => text,
    onText: (listener: (text: string) => void) => void listeners.push(listener),
    done: Promise.all([pump(child.stdout), pump(child.stderr)]),
  };
}

/** Polls `check` every 20 ms until it returns a truthy value or `timeoutMs` passes. */
export async function eventually<T>(
  check: () => T | Promise<T>,
  { timeoutMs = 10_000, what = "condition" } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Waits up to 2 s for a process to exit (Linux `/proc`).
 * @param pid the process id
 * @returns true once it is gone or is a zombie waiting to be reaped, false if it still runs
 */
export async function processExited(pid: number): Promise<boolean> {
  for (let i = 0; i < 200; i++) {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`).catch(() => null);
    if (stat === null || stat.split(") ")[1]?.startsWith("Z")) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return false;
}
