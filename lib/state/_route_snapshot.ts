/**
 * The routing an event carries from its subscription at accept time: its target, its agent
 * options, its coalescing window and its transform.
 *
 * @module
 */
/**
 * The subscription's routing at accept time, so the worker does not depend on the subscription
 * still existing (or being unchanged) when it runs.
 */
export interface RouteSnapshot {
  /** Target name: `log`, `telegram`, `slack`, ... */
  deliver: string;
  /** Rendered `deliver_extra.chat_id`, when the subscription has one. */
  chatId?: string;
  /** Skill names added to the system prompt, in order. */
  skills: string[];
  /**
   * The subscription's `format` (`plain` or `markdown`), when it sets one; absent, the mode
   * decides (docs/targets.md#formatting). The values of `MessageFormat` in lib/targets.
   */
  format?: "plain" | "markdown";
  /** The subscription's own agent options, when it sets any (docs/subscriptions.md#agent-options). */
  agent?: RouteAgentOptions;
  /**
   * How the event is folded with others of its burst into one agent run, when the subscription
   * coalesces and its key rendered non-empty (docs/subscriptions.md#coalescing).
   */
  coalesce?: CoalesceSnapshot;
  /**
   * The subscription's transform, when it has one (docs/subscriptions.md#transforms): the
   * worker runs it on an event whose {@link NewEvent.transformed} is absent.
   */
  transform?: TransformSnapshot;
  /**
   * The most tokens of earlier turns a run of the event's conversation is given, when the
   * subscription sets `session_budget` (docs/subscriptions.md#conversations).
   */
  sessionBudget?: number;
}

/**
 * A coalescing route's window for one event: events of the same subscription and `key` that
 * arrive less than `windowSeconds` apart share one agent run, begun at most `maxSeconds` after
 * the first of them arrived.
 */
export interface CoalesceSnapshot {
  /** The rendered `coalesce_key` (or `session`) template. */
  key: string;
  /** The quiet time that ends a window, in seconds (may be fractional). */
  windowSeconds: number;
  /** The longest a window stays open after its first event, in seconds. */
  maxSeconds: number;
}

/**
 * A route's transform for one event: the program to run on its payload, and what to render
 * from the JSON it prints.
 */
export interface TransformSnapshot {
  /** The program and its arguments, split as a shell splits words. */
  command: string[];
  /** Its time limit, in seconds (may be fractional). */
  timeoutSeconds: number;
  /** The route's prompt template; absent: the default prompt (docs/templates.md). */
  prompt?: string;
}

/** A route's overrides of `agent.*` for its runs; each absent one leaves the setting in force. */
export interface RouteAgentOptions {
  /** The model asked for, over `agent.model`. */
  model?: string;
  /** The answer's token limit, a whole number ≥ 1. */
  maxTokens?: number;
  /** Sampling temperature, 0 to 2. */
  temperature?: number;
  /** Instructions added to the system prompt, after the skills. */
  systemPrompt?: string;
}
