/**
 * `agent state migrate --to postgres`: copies a home's subscriptions and SQLite events into the
 * PostgreSQL database that several gateways share (docs/scaling.md#moving-a-home-to-postgresql).
 *
 * @module
 */
import { loadConfig } from "../lib/config/mod.ts";
import { ConflictError, UsageError } from "../lib/errors.ts";
import { gatewayRunning } from "../lib/state/gateway_lock.ts";
import { describe } from "../lib/state/postgres/mod.ts";
import { type EventImport, importSqliteEvents } from "../lib/state/migrate.ts";
import { readSubscriptions } from "../lib/subscriptions/file_store.ts";
import { openPostgresSubscriptions } from "../lib/subscriptions/postgres_source.ts";
import { stateDatabaseUrl, subscriptionPlace } from "../lib/subscriptions/source.ts";
import type { Command } from "./_command.ts";
import { parseFlags } from "./_flags.ts";

const usage = `Usage: agent state migrate --to postgres

Copies this home's subscriptions (webhook_subscriptions.json) and its events (state/gateway.db,
with their attempts, message parts and conversation turns) into the PostgreSQL database named
by DATABASE_URL, or else state.url in config.yaml. What the database already holds is kept, so
running it again copies nothing twice. The home's files are only read: nothing is deleted.

Stop this home's gateway first. Then set state.backend: postgres in config.yaml.

Options:
  --to postgres   where to copy to (the only choice)`;

/** `agent state migrate`. */
export const stateMigrate: Command = {
  path: ["state", "migrate"],
  summary: "Copy this home's subscriptions and SQLite events into PostgreSQL",
  usage,
  async run(argv, ctx) {
    const { values, positionals } = parseFlags(argv, { to: { type: "string" } }, usage);
    if (positionals.length > 0) throw new UsageError(`Unexpected argument.\n\n${usage}`);
    if (values.to !== "postgres") {
      throw new UsageError(`Give --to postgres: the only backend to migrate to.\n\n${usage}`);
    }
    const config = await loadConfig(ctx.env);
    const url = await stateDatabaseUrl(config);
    if (url === undefined) {
      throw new UsageError(
        "Name the database first: DATABASE_URL (in the environment or .env), or state.url in " +
          config.paths.config,
      );
    }
    // A gateway still running would go on accepting events into the file after they were
    // copied, and those would never reach the database.
    if (await gatewayRunning(config.paths.stateDb)) {
      throw new ConflictError(
        `A gateway is running with ${config.paths.home}: stop it first, so that no event ` +
          "arrives in state/gateway.db after the copy",
      );
    }
    const subscriptions = await importSubscriptions(config.paths.subscriptions, url);
    const events = await importEvents(config.paths.stateDb, url);
    ctx.stdout(report(`PostgreSQL ${describe(url)}`, subscriptions, events));
    if ((await subscriptionPlace(config)).kind === "file") {
      ctx.stdout(
        `Next: set state.backend: postgres in ${config.paths.config}, then start the gateways.`,
      );
    }
    return 0;
  },
};

/**
 * Adds the file's subscriptions that the database does not have; a name it has already keeps
 * the database's record.
 * @returns how many were copied, and how many were there already
 * @throws ConfigError when the file is corrupt (nothing is copied)
 */
async function importSubscriptions(
  path: string,
  url: string,
): Promise<{ copied: number; alreadyThere: number }> {
  const records = await readSubscriptions(path);
  const target = await openPostgresSubscriptions(url);
  try {
    return await target.update((stored) => {
      let copied = 0;
      for (const [name, record] of Object.entries(records)) {
        if (Object.hasOwn(stored, name)) continue;
        stored[name] = record;
        copied++;
      }
      return { copied, alreadyThere: Object.keys(records).length - copied };
    });
  } finally {
    await target.close();
  }
}

/** The events of the SQLite file, when there is one. */
async function importEvents(stateDb: string, url: string): Promise<EventImport | undefined> {
  try {
    await Deno.stat(stateDb);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
  return await importSqliteEvents(stateDb, url);
}

/** What the migration copied, as printed. */
function report(
  where: string,
  subscriptions: { copied: number; alreadyThere: number },
  events: EventImport | undefined,
): string {
  const eventLine = events === undefined
    ? "  events:        none (no state/gateway.db in this home)"
    : `  events:        ${events.events} copied, with ${events.attempts} attempts, ` +
      `${events.parts} message parts and ${events.turns} conversation turns; ` +
      `${events.alreadyThere} already there`;
  return [
    `Copied into ${where}:`,
    `  subscriptions: ${subscriptions.copied} copied; ${subscriptions.alreadyThere} already ` +
    "there (the database's record kept)",
    eventLine,
    "The home's files are left as they were.",
  ].join("\n");
}
