/**
 * `agent webhook show <event-id>`: the whole story of one event from the state database, as
 * `_lineage_view.ts` prints it (docs/commands.md).
 *
 * @module
 */
import { NotFoundError, UsageError } from "../lib/errors.ts";
import { openStateStore } from "../lib/state/open.ts";
import type { Command } from "./_command.ts";
import { loadEnabledConfig } from "./_enabled_config.ts";
import { parseFlags } from "./_flags.ts";
import { lineageJson, lineageText } from "./_lineage_view.ts";

const usage = `Usage: agent webhook show <event-id> [--json]

Prints the whole story of one event: the request as it arrived (its headers, with signatures and
tokens redacted, and the scheme that verified it), what the gateway decided, what its transform
printed, the events folded into its agent run (or the run that answered it), its conversation's
key and the earlier turns its run was given, the prompt, each attempt with its agent run
(provider, model, tokens, duration), the answer, and each message part delivered (target, chat,
the platform's message id or link, time). The id comes from
agent webhook events; a unique prefix is enough.
  --json   machine-readable output, with the payload`;

const options = { json: { type: "boolean" } } as const;

/** `agent webhook show`. */
export const webhookShow: Command = {
  path: ["webhook", "show"],
  summary: "Show an event's whole story: request, prompt, agent run, answer, messages",
  usage,
  async run(argv, ctx) {
    const { values, positionals } = parseFlags(argv, options, usage);
    if (positionals.length !== 1) throw new UsageError(`Expected one <event-id>.\n\n${usage}`);
    const config = await loadEnabledConfig(ctx);
    if (!config) return 1;
    const store = await openStateStore(config, { sqlite: { backgroundCheckpoints: false } });
    try {
      const lineage = await store.lineage(positionals[0]);
      if (lineage === null) {
        throw new NotFoundError(
          `No event "${positionals[0]}" (agent webhook events lists them; finished events are ` +
            `kept ${config.webhook.retentionDays} days)`,
        );
      }
      const { event } = lineage;
      if (values.json) {
        ctx.stdout(JSON.stringify(lineageJson(lineage), null, 2));
      } else {
        const holder = await store.keyHolder(event.subscription, event.deliveryId, ctx.now());
        ctx.stdout(lineageText(lineage, { holdsKey: holder === event.id }));
      }
      return 0;
    } finally {
      await store.close();
    }
  },
};
