/**
 * The registry of subcommands and the dispatcher `main.ts` calls.
 *
 * @module
 */
import { resolve } from "node:path";
import denoConfig from "../deno.json" with { type: "json" };
import { UsageError } from "../lib/errors.ts";
import type { Command, CommandContext } from "./_command.ts";
import { editDistance } from "./_flags.ts";
import { dashboard } from "./dashboard.ts";
import { doctor } from "./doctor.ts";
import { gatewayRun } from "./gateway_run.ts";
import { gatewayInstall } from "./gateway_install.ts";
import { gatewayUninstall } from "./gateway_uninstall.ts";
import { gatewaySetup } from "./gateway_setup.ts";
import { stateMigrate } from "./state_migrate.ts";
import { webhookEvents } from "./webhook_events.ts";
import { webhookList } from "./webhook_list.ts";
import { webhookDisable, webhookEnable } from "./webhook_disable.ts";
import { webhookRemove } from "./webhook_remove.ts";
import { webhookReplay } from "./webhook_replay.ts";
import { webhookRotateSecret } from "./webhook_rotate_secret.ts";
import { webhookShow } from "./webhook_show.ts";
import { webhookSubscribe } from "./webhook_subscribe.ts";
import { webhookTest } from "./webhook_test_event.ts";

export type { Command, CommandContext } from "./_command.ts";

/**
 * This program's version: deno.json's `"version"`, imported as JSON so that `deno compile`
 * builds it into the executable. `agent --version` prints it.
 */
export const VERSION: string = denoConfig.version;

/** Every subcommand, in the order `agent --help` lists them. */
export const COMMANDS: readonly Command[] = [
  webhookSubscribe,
  webhookList,
  webhookRemove,
  webhookDisable,
  webhookEnable,
  webhookTest,
  webhookRotateSecret,
  webhookEvents,
  webhookShow,
  webhookReplay,
  gatewaySetup,
  gatewayRun,
  gatewayInstall,
  gatewayUninstall,
  doctor,
  dashboard,
  stateMigrate,
];

/**
 * The top-level help text.
 * @param agentHome `AGENT_HOME`, when set: the home folder the help names
 */
export function helpText(agentHome?: string): string {
  return [
    "Usage: agent <command> [options]   (agent <command> --help for its options)",
    "       agent --version",
    "",
    "Commands:",
    commandList(COMMANDS),
    "",
    agentHome
      ? `Home folder: ${agentHome} (from AGENT_HOME; ~/.agent without it).`
      : "Home folder: ~/.agent (set AGENT_HOME to use another).",
  ].join("\n");
}

/** One line per command: `  agent webhook list  List subscriptions`, summaries aligned. */
function commandList(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => c.path.join(" ").length));
  return commands.map((c) => `  agent ${c.path.join(" ").padEnd(width)}  ${c.summary}`)
    .join("\n");
}

/**
 * Finds the command named by the first words of `argv` and runs it.
 * @param argv the process arguments (without the executable)
 * @param ctx what commands may touch
 * @returns the exit code
 * @throws UsageError for an unknown command; whatever the command throws
 * @example
 * ```ts
 * const code = await runCommand(["webhook", "subscribe", "gh", "--events", "issues"], ctx);
 * ```
 */
export async function runCommand(argv: string[], ctx: CommandContext): Promise<number> {
  // The home the help texts name, when AGENT_HOME sets one.
  const home = ctx.env.AGENT_HOME ? resolve(ctx.env.AGENT_HOME) : undefined;
  if (argv.length === 0 || argv[0] === "--help" || argv[0] === "-h" || argv[0] === "help") {
    ctx.stdout(helpText(home));
    return argv.length === 0 ? 2 : 0;
  }
  if (argv[0] === "--version" || argv[0] === "-V") {
    ctx.stdout(`agent ${VERSION}`);
    return 0;
  }
  const command = COMMANDS.find((c) => c.path.every((word, i) => argv[i] === word));
  const group = COMMANDS.filter((c) => c.path[0] === argv[0]);
  if (!command && group.length > 0 && ["--help", "-h", "help", undefined].includes(argv[1])) {
    // `agent webhook --help`: the group's commands.
    ctx.stdout(`Commands:\n${commandList(group)}`);
    return argv[1] === undefined ? 2 : 0;
  }
  if (!command) {
    // The words that should have named a command: the first two, flags after the first aside.
    const typed = [argv[0], ...argv.slice(1, 2).filter((word) => !word.startsWith("-"))];
    const closest = closestCommand(argv);
    const hint = closest ? `. Did you mean "agent ${closest}"?` : "";
    throw new UsageError(`Unknown command: agent ${typed.join(" ")}${hint}\n\n${helpText(home)}`);
  }
  const rest = argv.slice(command.path.length);
  if (rest.includes("--help") || rest.includes("-h")) {
    ctx.stdout(home ? command.usage.replaceAll("~/.agent", home) : command.usage);
    return 0;
  }
  return await command.run(rest, ctx);
}

/**
 * The command the words of `argv` were probably meant to name, as unknown flags get theirs
 * (`--event` → `--events`): `webhok list` → `webhook list`. A command whose words are within
 * two edits of as many words typed, else a group within two edits of the first word typed
 * (`webhok` → `webhook`); the closest, in the order of {@link COMMANDS} on a tie.
 * @param argv the process arguments, naming no command
 * @returns the command's words, space-separated, or undefined when none is that close
 */
function closestCommand(argv: string[]): string | undefined {
  const groups = [...new Set(COMMANDS.filter((c) => c.path.length > 1).map((c) => c.path[0]))];
  const stages = [
    COMMANDS.map((c) => c.path.join(" ")),
    // A group typed right needs no suggestion of itself: its commands were not near enough.
    groups.includes(argv[0]) ? [] : groups,
  ];
  for (const candidates of stages) {
    let best: { name: string; distance: number } | undefined;
    for (const name of candidates) {
      const words = name.split(" ").length;
      if (argv.length < words) continue;
      const distance = editDistance(argv.slice(0, words).join(" "), name);
      if (distance <= 2 && (!best || distance < best.distance)) best = { name, distance };
    }
    if (best) return best.name;
  }
  return undefined;
}
