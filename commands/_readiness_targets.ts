/**
 * Readiness of each subscription's target (docs/commands.md#agent-doctor): its token, its
 * destination and the shape of its chat id, checked by `validateTarget` as `subscribe` checks
 * them, so both say the same; for `origin`, the home target and the forge's token. Also which
 * targets have their token, for the start banner of `gateway run`.
 *
 * @module
 */
import type { Config } from "../lib/config/mod.ts";
import { ConfigError, UsageError } from "../lib/errors.ts";
import type { Route } from "../lib/subscriptions/mod.ts";
import { secretProblem } from "../lib/subscriptions/file_store.ts";
import { routesAndHidden } from "../lib/subscriptions/routes.ts";
import { homeChannelOf, TARGET_NAMES, validateTarget } from "../lib/targets/mod.ts";
import { parseHome } from "../lib/targets/origin.ts";
import { type Check, failed, passed } from "./_readiness_check.ts";

type Env = Record<string, string | undefined>;

/**
 * A chat id with a placeholder: `validateTarget` checks such an id only per event, so with it
 * the check is of the token alone.
 */
const ANY_CHAT = "{chat}";

/**
 * One check per subscription and static route: can its target deliver? Records the gateway
 * refuses (a hand-edited field of the wrong type, an unknown target) and a corrupt
 * subscription file are failed checks too.
 * @param config the loaded configuration: the subscription file, the static routes, the
 *   environment with the tokens and `extra.home`
 * @returns the checks, all blocking, and the routes the gateway serves
 */
export async function subscriptionChecks(
  config: Config,
): Promise<{ checks: Check[]; routes: Route[] }> {
  let listing;
  try {
    listing = await routesAndHidden(config);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const routes = [...config.webhook.routes.values()];
    return {
      checks: [
        failed("subscriptions", error.message, true),
        ...routes.map((r) => routeCheck(r, config)),
      ],
      routes,
    };
  }
  const { routes, unusable } = listing;
  const refused = [...unusable.values()].map((problem) =>
    failed("subscriptions", `${problem}; the gateway refuses its requests until it is fixed`, true)
  );
  const served = routes.filter((route) => route.origin === "static" || !unusable.has(route.name));
  return {
    checks: [...refused, ...served.map((route) => routeCheck(route, config))],
    routes: served,
  };
}

/** What stops a target from delivering: missing tokens apart, as they share a next step. */
interface Problems {
  /** A missing destination, a malformed chat id, no home target. */
  other: string[];
  /** `TELEGRAM_BOT_TOKEN is not set; the gateway needs it to deliver to telegram`, ... */
  tokens: string[];
}

/** The check of one route's target. */
function routeCheck(route: Route, config: Config): Check {
  const target = route.deliver ?? "log";
  const subject = `subscription "${route.name}"`;
  // A secret no sender can meet refuses every request before the target matters.
  const secret = secretProblem(route, config.webhook.secret);
  if (secret !== undefined) return failed(subject, secret, true);
  const { other, tokens } = target === "origin"
    ? originProblems(route, config)
    : targetProblems(route, config);
  if (other.length === 0 && tokens.length === 0) {
    const mode = route.deliver_only ? "direct delivery" : "agent run";
    return passed(subject, `${mode}, delivered to ${destination(route, config)}`);
  }
  const step = tokens.length === 0 ? "" : `: add ${tokens.length > 1 ? "them" : "it"} to ` +
    `${config.paths.envFile} or the gateway's environment, then restart a running gateway`;
  return failed(subject, `${target}: ${[...other, ...tokens].join("; ")}${step}`, true);
}

/** What stops a route's own target (not `origin`) from delivering: destination, chat id, token. */
function targetProblems(route: Route, config: Config): Problems {
  const target = route.deliver ?? "log";
  try {
    const tokens = validateTarget({
      target,
      chatId: route.deliver_extra?.chat_id,
      deliverOnly: route.deliver_only ?? false,
      env: config.env,
    });
    return { other: [], tokens };
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    return {
      other: [withChatStep(error.message, route, config)],
      tokens: missingTokens(target, config.env),
    };
  }
}

/**
 * What stops `origin` from answering: no `extra.home` for events without an item to comment
 * on, a home target that cannot deliver, and no token for the forge its sender is pinned to
 * (for either forge when it is not pinned).
 */
function originProblems(route: Route, config: Config): Problems {
  const problems: Problems = { other: [], tokens: [] };
  const home = config.webhook.homeTarget;
  if (home === undefined) {
    problems.other.push(
      "events with no issue or merge request to comment on (a push, a Stripe event) have " +
        `nowhere to go: set platforms.webhook.extra.home in ${config.paths.config} ` +
        "(e.g. telegram:123456)",
    );
  } else {
    const { target, chatId } = parseHome(home);
    try {
      problems.tokens.push(
        ...validateTarget({ target, chatId, deliverOnly: false, env: config.env }),
      );
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      problems.other.push(`extra.home ${home}: ${error.message}`);
    }
  }
  const github = missingTokens("github_comment", config.env);
  const gitlab = missingTokens("gitlab_comment", config.env);
  if (route.auth === "github") problems.tokens.push(...github);
  else if (route.auth === "gitlab") problems.tokens.push(...gitlab);
  else if (route.auth === undefined && github.length > 0 && gitlab.length > 0) {
    problems.tokens.push(...github, ...gitlab);
  }
  return problems;
}

/** The warning of a target's missing token (none when it is set, or the target needs none). */
function missingTokens(target: string, env: Env): string[] {
  return validateTarget({ target, chatId: ANY_CHAT, deliverOnly: false, env });
}

/** A destination or chat id problem, with how to change a chat id the route holds. */
function withChatStep(problem: string, route: Route, config: Config): string {
  if (route.origin === "static") return `${problem} (the route is in ${config.paths.config})`;
  if (!problem.startsWith("--deliver-chat-id")) return problem;
  return `${problem}: give another with agent webhook subscribe ${route.name} --deliver-chat-id <chat>`;
}

/** Where a route's messages go, for a passed check: `telegram (chat 123)`, `the gateway log`. */
function destination(route: Route, config: Config): string {
  const target = route.deliver ?? "log";
  if (target === "log") return "the gateway log";
  if (target === "origin") {
    const home = config.webhook.homeTarget;
    return `origin (a comment on the event's issue or merge request, else ${home})`;
  }
  const chat = route.deliver_extra?.chat_id;
  const home = homeChannelOf(target);
  if (chat) return `${target} (chat ${chat})`;
  return home ? `${target} (the chat in ${home})` : target;
}

/**
 * Which targets have their token in `env`, for the start banner (never the tokens).
 * @param env the environment the gateway delivers with (process env over `.env`)
 * @returns `set for telegram, github_comment; not set for discord, slack, gitlab_comment`
 */
export function tokenSummary(env: Env): string {
  const needToken = TARGET_NAMES.filter((target) => missingTokens(target, {}).length > 0);
  const unset = needToken.filter((target) => missingTokens(target, env).length > 0);
  const set = needToken.filter((target) => !unset.includes(target));
  return [
    ...set.length ? [`set for ${set.join(", ")}`] : [],
    ...unset.length ? [`not set for ${unset.join(", ")}`] : [],
  ].join("; ");
}
