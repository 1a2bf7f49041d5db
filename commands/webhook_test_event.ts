/**
 * `agent webhook test <name>`: sends a signed test event to the running gateway, explains the
 * answer, and waits for the event's outcome (`_test_outcome.ts`) (docs/commands.md).
 *
 * @module
 */
import type { Config } from "../lib/config/mod.ts";
import { UsageError } from "../lib/errors.ts";
import { openStateStore } from "../lib/state/open.ts";
import { parseTestPayload } from "../lib/subscriptions/test_event.ts";
import {
  prepareTest,
  sendTest,
  testedRoute,
  testGatewayUrl,
} from "../lib/subscriptions/test_send.ts";
import type { Command, CommandContext } from "./_command.ts";
import { loadEnabledConfig } from "./_enabled_config.ts";
import { parseFlags, wholeNumber } from "./_flags.ts";
import { waitForOutcome } from "./_test_outcome.ts";

const usage = `Usage: agent webhook test <name> [--payload JSON] [--event TYPE] [--wait S]

Signs a test event with the subscription's secret, as GitHub does (X-Hub-Signature-256), or as
the scheme the subscription is pinned to with --auth does, and posts it to the running gateway.
--payload is a JSON object. --event (default: test) goes where the scheme's senders put the
event type: X-GitHub-Event, X-Gitlab-Event (a payload's object_kind comes first), X-Shopify-Topic,
or for the other schemes the payload's "type", unless the payload names its type itself ("type",
"event_type" or "event"). A Linear payload gets the current webhookTimestamp.
Then it waits up to --wait seconds (default 30) for the event's outcome and prints it: the agent
run (model, tokens) and each message delivered, or the error; it exits 0 once delivered, 1 when
the event failed or no outcome came in time. --wait 0 returns with the gateway's answer.`;

const options = {
  payload: { type: "string" },
  event: { type: "string" },
  wait: { type: "string" },
} as const;

/** How long `test` waits for the event's outcome by default, in seconds. */
const DEFAULT_WAIT_SECONDS = 30;

/** `agent webhook test`. */
export const webhookTest: Command = {
  path: ["webhook", "test"],
  summary: "Send a signed test event to a subscription",
  usage,
  async run(argv, ctx) {
    const { values, positionals } = parseFlags(argv, options, usage);
    if (positionals.length !== 1) throw new UsageError(`Expected one <name>.\n\n${usage}`);
    const waitSeconds = values.wait === undefined ? DEFAULT_WAIT_SECONDS : wholeNumber(values.wait);
    if (!Number.isSafeInteger(waitSeconds)) {
      throw new UsageError("--wait must be a whole number of seconds (0: do not wait)");
    }
    const payload = parseTestPayload(values.payload);
    const config = await loadEnabledConfig(ctx);
    if (!config) return 1;
    const tested = await testedRoute(config, positionals[0]);
    if ("refused" in tested) {
      ctx.stderr(tested.refused);
      return 1;
    }
    const test = prepareTest(tested.route, {
      payload,
      event: values.event ?? "test",
      nowMs: ctx.now(),
    });
    for (const note of test.notes) ctx.stderr(note);
    const answer = await sendTest(test, {
      secret: tested.secret,
      baseUrl: await testGatewayUrl(config),
      nowMs: ctx.now(),
      fetch: ctx.fetch,
    });
    if (answer.kind !== "answered") {
      ctx.stderr(answer.message);
      return 1;
    }
    ctx.stdout(`POST ${answer.url}\n${answer.status} ${answer.statusText}\n${answer.text}`);
    for (const hint of answer.hints) ctx.stdout(hint);
    if (answer.status < 200 || answer.status > 299) return 1;
    if (answer.eventId === undefined || waitSeconds === 0) return 0;
    return await outcomeOf(answer.eventId, { waitSeconds, config, ctx });
  },
};

/**
 * Waits for the outcome of the event the gateway took, in the state database of this home.
 * @param eventId the event
 * @param options `waitSeconds`: the longest wait; the command's `config` and `ctx`
 * @returns the exit code of {@link waitForOutcome}
 */
async function outcomeOf(
  eventId: string,
  options: { waitSeconds: number; config: Config; ctx: CommandContext },
): Promise<number> {
  const { waitSeconds, config, ctx } = options;
  ctx.stdout(`Waiting up to ${waitSeconds} s for the outcome of ${eventId} (--wait 0 does not)...`);
  const store = await openStateStore(config, { sqlite: { backgroundCheckpoints: false } });
  try {
    return await waitForOutcome(store, eventId, {
      waitMs: waitSeconds * 1000,
      now: ctx.now,
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      print: ctx.stdout,
    });
  } finally {
    await store.close();
  }
}
