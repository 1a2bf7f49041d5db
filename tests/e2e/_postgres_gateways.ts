/**
 * What the end-to-end tests of several gateways on one PostgreSQL database share: a fresh schema
 * of a throwaway server (tests/fakes/postgres.ts), one home per gateway naming it
 * (`state.backend: postgres`, a short `state.lease_seconds`), loopback Telegram and LLM fakes,
 * and the subscription `ci` (issues, prompt `Delivery {__delivery_id__}`, to Telegram), made once
 * by the CLI in the database, where every gateway reads it.
 *
 * @module
 */
import { join } from "node:path";
import postgres from "postgres";
import { startFakeTelegram } from "../fakes/chat_servers.ts";
import { githubExample } from "../fakes/github_examples.ts";
import { type FakeLlmOptions, startFakeLlm } from "../fakes/llm_server.ts";
import type { ThrowawayPostgres } from "../fakes/postgres.ts";
import { enabledConfig, signedGitHub, tempHome } from "../_helpers.ts";
import { subscribeCi } from "./_cli.ts";

/** The subscription's secret. */
export const SECRET = "postgres-gateways-secret-0123";
/** The Telegram chat the messages go to. */
export const CHAT = "4242";
const ISSUE = githubExample("issues", "opened");

/** Options of {@link gatewaysStack}. */
export interface StackOptions {
  /** How many homes (gateways). @default {2} */
  homes?: number;
  /** `agent.max_concurrency` of each gateway. @default {8} */
  concurrency?: number;
  /** The fake LLM's answer. @default {echo of the prompt} */
  answer?: FakeLlmOptions["answer"];
  /** More `webhook subscribe` arguments, such as `--rate-limit 10`. */
  subscribe?: string[];
  /** `state.lease_seconds` of each gateway. @default {3} */
  leaseSeconds?: number;
}

/** Homes, fakes and a client of the database; `await using` removes them all. */
export interface Stack extends AsyncDisposable {
  /** The environment of each home's gateway and commands. */
  envs: Record<string, string>[];
  /** The homes' folders. */
  homes: string[];
  telegram: ReturnType<typeof startFakeTelegram>;
  llm: Awaited<ReturnType<typeof startFakeLlm>>;
  /** A client of the schema, for what no command shows (leases, heartbeats). */
  sql: postgres.Sql;
}

/**
 * Builds the homes and fakes on a fresh schema of `server`, and subscribes `ci`.
 * @throws AssertionError when `webhook subscribe` fails
 */
export async function gatewaysStack(
  server: ThrowawayPostgres,
  options: StackOptions = {},
): Promise<Stack> {
  const schema = await server.createSchema();
  const config = `${enabledConfig(0)}agent:\n  max_concurrency: ${options.concurrency ?? 8}\n` +
    `state:\n  backend: postgres\n  lease_seconds: ${options.leaseSeconds ?? 3}\n`;
  const homes = await Promise.all(
    Array.from({ length: options.homes ?? 2 }, () => tempHome({ config })),
  );
  const telegram = startFakeTelegram();
  const llm = await startFakeLlm(options.answer ? { answer: options.answer } : {});
  const sql = postgres(schema.url, { max: 2, onnotice: () => {} });
  const envs = homes.map((h) => ({
    AGENT_HOME: h.home,
    DATABASE_URL: schema.url,
    ...telegram.env,
    ...llm.env,
  }));
  const dispose = async () => {
    await sql.end();
    await llm.close();
    await telegram.close();
    for (const h of homes) await h[Symbol.asyncDispose]();
    await schema.drop();
  };
  await subscribeCi(envs[0], { secret: SECRET, chat: CHAT, extra: options.subscribe, dispose });
  return {
    envs,
    homes: homes.map((h) => h.home),
    telegram,
    llm,
    sql,
    [Symbol.asyncDispose]: dispose,
  };
}

/**
 * POSTs the `issues.opened` example to `ci` on a gateway, signed, with delivery id `delivery`.
 * @returns the status, and the `Retry-After` header; the body is read
 */
export async function postIssue(
  url: string,
  delivery: string,
): Promise<{ status: number; retryAfter: string | null; body: string }> {
  const response = await fetch(
    `${url}/webhooks/ci`,
    await signedGitHub(SECRET, ISSUE, { delivery }),
  );
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    body: await response.text(),
  };
}

/**
 * The delivery ids the Telegram fake received messages for, with how many times each.
 * @param texts the messages' texts, `echo: Delivery <id>`
 */
export function deliveriesIn(texts: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const text of texts) {
    const id = text.match(/Delivery (\S+)$/)?.[1] ?? text;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/** The gateway id a home's gateway (the one that runs its worker) claims under. */
export async function gatewayIdOf(home: string): Promise<string> {
  return (await Deno.readTextFile(join(home, "state", "gateway_id"))).trim();
}
