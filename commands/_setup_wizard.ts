/**
 * The questions of `agent gateway setup` on a terminal: enable webhooks, host, port, the global
 * HMAC secret (typed twice, not shown) and optionally one chat platform's token and home channel.
 *
 * @module
 */
import { isListenHost, LISTEN_HOST_RULE } from "../lib/config/mod.ts";
import { UsageError } from "../lib/errors.ts";
import type { CommandContext } from "./_command.ts";
import { type Answers, parsePort } from "./_setup_answers.ts";
import { generateSecret } from "../lib/subscriptions/mod.ts";

/** The chat platforms the wizard offers, with their token and home channel variables. */
const CHAT_PLATFORMS = {
  telegram: ["TELEGRAM_BOT_TOKEN", "TELEGRAM_HOME_CHANNEL"],
  discord: ["DISCORD_BOT_TOKEN", "DISCORD_HOME_CHANNEL"],
  slack: ["SLACK_BOT_TOKEN", "SLACK_HOME_CHANNEL"],
} as const;

/** Asks one question; resolves to the trimmed answer. */
type Reader = (question: string) => Promise<string>;

/** The wizard's two ways of reading an answer. */
interface Readers {
  /** Shows what is typed. */
  line: Reader;
  /** Does not show what is typed: secrets and tokens. */
  hidden: Reader;
}

/**
 * Asks the wizard's questions, each again (up to three times) while its answer does not parse.
 * @param ctx where the questions are read and the retries said
 * @param current config.yaml's webhook settings: the defaults Enter takes
 * @returns the answers; the secret is generated when none is typed and none is set yet
 * @throws UsageError at the end of input, or after a third answer that does not parse
 */
export async function askSetup(
  ctx: CommandContext,
  current: { enabled: boolean; host: string; port: number; secret?: string },
): Promise<Answers> {
  const { line, hidden } = readers(ctx);
  const enabled = await askUntil(ctx, {
    question: () => line("Enable the webhook platform? [Y/n] "),
    parse: (a) => {
      if (a === "" || /^y(es)?$/i.test(a)) return true;
      if (/^no?$/i.test(a)) return false;
      throw new UsageError("Answer y or n");
    },
  });
  const host = await askUntil(ctx, {
    question: () => line(`Listen host [${current.host}] `),
    parse: (a) => {
      if (a === "") return current.host;
      if (!isListenHost(a)) throw new UsageError(`The host must be ${LISTEN_HOST_RULE}`);
      return a;
    },
  });
  const port = await askUntil(ctx, {
    question: () => line(`Port [${current.port}] `),
    parse: (a) => a === "" ? current.port : parsePort(a),
  });
  const secret = await askSecret(ctx, { hidden, hasSecret: Boolean(current.secret) });
  return {
    enabled,
    host,
    port,
    secret: secret || (current.secret ? undefined : generateSecret()),
    secretGenerated: !secret && !current.secret,
    env: await askChatPlatform(ctx, { line, hidden }),
  };
}

/** The readers of the wizard's answers: trimmed, and the end of input stops the wizard. */
function readers(ctx: CommandContext): Readers {
  const read =
    (reader: (question: string) => Promise<string | null>, unseen = false) => async (q: string) => {
      const answer = await reader(q);
      if (answer === null) throw new InputEnded("Setup cancelled: no more input");
      const trimmed = answer.trim();
      // Blanks around a secret or token are a paste's, and left out; said, since it was not seen.
      if (unseen && trimmed !== "" && trimmed !== answer) {
        ctx.stdout("(the blanks around what was typed are left out)");
      }
      return trimmed;
    };
  const line = read(ctx.readLine);
  // Secrets and tokens are not shown as they are typed (nor left in the terminal's scrollback).
  const hidden = read(ctx.readSecret ?? ctx.readLine, true);
  return { line, hidden };
}

/**
 * Asks for the global HMAC secret.
 * @param options `hidden`: reads without showing; `hasSecret`: whether one is set already
 * @returns the secret typed, or "" for Enter (keep the current one, or generate one)
 */
async function askSecret(
  ctx: CommandContext,
  options: { hidden: Reader; hasSecret: boolean },
): Promise<string> {
  const { hidden } = options;
  const proposal = options.hasSecret ? "keep the current one" : "generate one";
  // Typed unseen, so typed twice: a typo would only show later, as every sender's 401.
  return await askUntil(ctx, {
    question: async () => {
      const typed = await hidden(`Global HMAC secret (not shown; Enter to ${proposal}) `);
      if (typed === "") return typed;
      const again = await hidden("The same secret again (not shown) ");
      if (again !== typed) throw new UsageError("The two secrets differ: type it again");
      return typed;
    },
    parse: (answer) => answer,
  });
}

/** Optionally asks for one chat platform's bot token and home channel. */
async function askChatPlatform(
  ctx: CommandContext,
  { line, hidden }: Readers,
): Promise<Record<string, string>> {
  const names = Object.keys(CHAT_PLATFORMS);
  const platform = await askUntil(ctx, {
    question: () => line(`Chat platform for answers (${names.join("/")}, Enter to skip) `),
    parse: (a) => {
      const name = a.toLowerCase();
      if (name === "" || Object.hasOwn(CHAT_PLATFORMS, name)) return name;
      throw new UsageError(`Answer one of ${names.join(", ")}, or press Enter`);
    },
  });
  if (!platform) return {};
  const [tokenKey, homeKey] = CHAT_PLATFORMS[platform as keyof typeof CHAT_PLATFORMS];
  const env: Record<string, string> = {};
  const token = await hidden(`${tokenKey} (not shown; Enter to skip) `);
  if (token) env[tokenKey] = token;
  const home = await line(`${homeKey}: default chat or channel id (Enter to skip) `);
  if (home) env[homeKey] = home;
  return env;
}

/** The end of input (Ctrl-D) at a question: the wizard stops instead of asking again. */
class InputEnded extends UsageError {}

/** Asks again, up to three times, while the answer does not parse. */
async function askUntil<T>(
  ctx: CommandContext,
  options: { question: () => Promise<string>; parse: (answer: string) => T },
): Promise<T> {
  for (let tries = 1;; tries++) {
    try {
      return options.parse(await options.question());
    } catch (error) {
      if (!(error instanceof UsageError) || error instanceof InputEnded || tries >= 3) throw error;
      ctx.stdout(error.message);
    }
  }
}
