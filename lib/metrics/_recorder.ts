/**
 * What the gateway's parts tell the metrics: the {@link MetricsRecorder} interface, its labels,
 * and the recorder that records nothing.
 *
 * @module
 */

/**
 * The label of a request whose URL names no subscription the gateway serves, and of a target
 * that does not exist: every such name counts under this one label, so that whoever can reach
 * the webhook port cannot grow the set of series.
 */
export const UNKNOWN = "(unknown)";

/**
 * What became of an event, as `agent_events_total{status}` counts it: decided at ingest
 * (`accepted` for the worker, `duplicate`, `ignored` by the filter), or its end (`delivered`,
 * `failed` for good), by the worker or, in direct mode, while the sender waits.
 */
export type EventOutcome = "accepted" | "duplicate" | "ignored" | "delivered" | "failed";

/** LLM tokens of one agent run, as the endpoint counted them. */
export interface TokenUsage {
  /** Tokens of the prompt (system and user messages). */
  promptTokens: number;
  /** Tokens of the answer. */
  completionTokens: number;
}

/**
 * Where the gateway's parts tell what happened. Every method is cheap and never throws; the
 * gateway's recorder is `createGatewayMetrics`'s, a test's may be a fake.
 */
export interface MetricsRecorder {
  /**
   * A request to `/webhooks/<name>` was answered.
   * @param subscription the name, when it is one the gateway serves; null for any other URL
   *   (counted as {@link UNKNOWN})
   * @param status the answer's HTTP status
   */
  webhookRequest(subscription: string | null, status: number): void;
  /**
   * An event was decided on, or ended (see {@link EventOutcome}).
   * @param subscription the event's subscription: a name the gateway serves
   */
  event(subscription: string, outcome: EventOutcome): void;
  /** An agent run began. */
  agentRunStarted(): void;
  /**
   * An agent run ended, answered or failed.
   * @param seconds how long it took
   */
  agentRunEnded(seconds: number): void;
  /**
   * An agent run's LLM tokens, when the runner reports them.
   * @param subscription the event's subscription
   */
  llmTokens(subscription: string, usage: TokenUsage): void;
  /**
   * A delivery (every part of one message) ended.
   * @param target the target that sent it, or was to (`telegram`)
   * @param outcome `seconds` it took, and whether it failed
   */
  delivery(target: string, outcome: { seconds: number; failed: boolean }): void;
}

/** The recorder that records nothing: the default wherever a recorder is optional. */
export const NO_METRICS: MetricsRecorder = {
  webhookRequest() {},
  event() {},
  agentRunStarted() {},
  agentRunEnded() {},
  llmTokens() {},
  delivery() {},
};
