/**
 * How `agent webhook show` prints an event's lineage (docs/commands.md): for people, the
 * request as it arrived, what the gateway decided, the prompt, each attempt with its agent run,
 * the answer and each part delivered; for scripts, the same as JSON, payload included.
 *
 * Everything a sender, an agent or a platform wrote (headers, prompt, answer, errors) is printed
 * through `oneTerminalLine`, a line at a time, so that it cannot drive the terminal.
 *
 * @module
 */
import { oneTerminalLine } from "../lib/log.ts";
import type { AgentRun, Attempt, Lineage, PartReceipt, StoredEvent } from "../lib/state/mod.ts";
import {
  cut,
  duration,
  isoOrNull,
  publicAttempt,
  publicFields,
  utcTime,
  withSeries,
} from "./_event_listing.ts";
import { coalesceSection, foldedJson } from "./_coalesce_view.ts";
import { conversationJson, conversationSection } from "./_conversation_view.ts";
import { SKIPPED_JSON, transformJson } from "../lib/transforms/mod.ts";

/**
 * An event's lineage as `--json` prints it: the fields of `webhook events --json`, the scheme
 * and headers, the payload (parsed when it is JSON), the transform and what it printed, the
 * events folded into its run, its conversation, the prompt, the answer, each attempt with its
 * agent run and answer, and each part delivered.
 * @param lineage the event's lineage, with the events folded into its run
 *   (docs/subscriptions.md#coalescing) and its conversation's earlier turns
 * @returns a value for `JSON.stringify`
 */
export function lineageJson(lineage: Lineage) {
  const { event, attempts, parts } = lineage;
  return {
    ...publicFields(event),
    chat_id: event.route.chatId ?? null,
    skills: event.route.skills,
    scheme: event.scheme ?? null,
    headers: event.headers ?? null,
    payload: parsedPayload(event.payload),
    transform: transformJson(event),
    transformed: event.transformed ?? null,
    folded: foldedJson(lineage.folded ?? []),
    session: conversationJson(lineage),
    prompt: event.prompt,
    answer: event.response,
    attempts_detail: withSeries(attempts).map((attempt) => ({
      ...publicAttempt(attempt),
      answer: attempt.answer,
    })),
    parts: parts.map((part) => ({
      part: part.part,
      parts: part.parts,
      target: part.target,
      chat: part.chat,
      message_id: part.messageId,
      url: part.url,
      sent_at: isoOrNull(part.sentAtMs),
    })),
  };
}

/**
 * An event's lineage as people read it, one section after another.
 * @param lineage the event's lineage, with the events folded into its run
 *   (docs/subscriptions.md#coalescing) and its conversation's earlier turns
 * @param options `holdsKey`: whether the event holds its delivery id's idempotency key now
 * @returns the text, without a final newline
 */
export function lineageText(lineage: Lineage, options: { holdsKey: boolean }): string {
  const { event, attempts, parts } = lineage;
  return [
    summary(event),
    received(event),
    decisions(event, options.holdsKey),
    ...transformedSection(event),
    ...coalesceSection(event, lineage.folded ?? []),
    ...conversationSection(lineage),
    section("Prompt", quoted(event.prompt)),
    section("Attempts", attemptLines(attempts)),
    section("Answer", event.response === null ? ["  none yet"] : quoted(event.response)),
    section("Delivered", parts.length ? parts.map(partLine) : [noPartText(event)]),
    `Payload: ${event.payload.length} characters (agent webhook show --json prints it)`,
  ].join("\n\n");
}

/**
 * What the route's transform printed (docs/subscriptions.md#transforms), that it skipped the
 * event, or that it is still to run and why it failed last; nothing for a route with none.
 */
function transformedSection(event: StoredEvent): string[] {
  if (event.route.transform === undefined) return [];
  const command = event.route.transform.command.join(" ");
  const pending = [
    "  not yet: the transform runs again with the next attempt",
    ...(event.lastError === null ? [] : [`  last error: ${cut(errorLine(event.lastError), 400)}`]),
  ];
  const skipped = [`  | ${SKIPPED_JSON}`, "  it skipped the event: no agent ran, nothing was sent"];
  return [
    section(
      `Transformed by ${line(command)}`,
      event.transformed === undefined
        ? pending
        : event.transformed === SKIPPED_JSON
        ? skipped
        : quoted(event.transformed),
    ),
  ];
}

/**
 * Why nothing was delivered: an agent event delivered with no part had the silent marker for
 * its answer (an answer is never empty, and every other delivery sends a part).
 */
function noPartText(event: StoredEvent): string {
  if (event.status === "delivered" && event.transformed === SKIPPED_JSON) {
    return "  none: the transform skipped it";
  }
  const silent = event.status === "delivered" && event.mode === "agent" && event.partsSent === 0;
  return silent ? "  none: the agent chose silence" : "  no part yet";
}

/** The event's first lines: id and status, where it came from, where it goes. */
function summary(event: StoredEvent): string {
  const error = event.lastError === null ? [] : [`  last error:   ${errorLine(event.lastError)}`];
  return [
    `Event ${event.id}: ${event.status}`,
    `  subscription: ${event.subscription}`,
    `  event:        ${line(event.eventLabel)} from ${event.source}`,
    `  delivery id:  ${line(event.deliveryId)}`,
    ...error,
  ].join("\n");
}

/** When the request came, the scheme that verified it, and its headers. */
function received(event: StoredEvent): string {
  const scheme = event.scheme === undefined
    ? "the scheme was not recorded (received before schemes were kept)"
    : `verified by ${event.scheme}`;
  const replayed = event.replayedAtMs === null
    ? []
    : [`  replayed ${utcTime(event.replayedAtMs)} UTC`];
  const headers = event.headers === undefined
    ? ["  (headers were not kept for events received before this version)"]
    : Object.entries(event.headers).map(([name, value]) => `  ${line(name)}: ${line(value)}`);
  return section(`Received ${utcTime(event.receivedAtMs)} UTC, ${scheme}`, [
    ...replayed,
    ...headers,
  ]);
}

/** What the gateway decided: dedupe, mode and route, skills. */
function decisions(event: StoredEvent, holdsKey: boolean): string {
  const { route } = event;
  const chat = route.chatId === undefined ? "" : ` chat ${line(route.chatId)}`;
  const destination = `${route.deliver}${chat}`;
  const dispatch = event.mode === "agent"
    ? `agent mode: the agent answers the prompt, its answer goes to ${destination}`
    : `direct delivery: the prompt itself goes to ${destination} while the sender waits`;
  const dedupe = !event.dedupe
    ? "the request had no delivery id: its retries are not recognised as duplicates"
    : holdsKey
    ? "a request with the same delivery id is answered as a duplicate, not run again"
    : "its delivery id no longer dedupes (expired, or taken by a later event)";
  const skills = route.skills.length ? [`  skills: ${route.skills.join(", ")}`] : [];
  return section("Decisions", [
    `  accepted: the subscription's filter let ${line(event.eventLabel)} through`,
    `  ${dedupe}`,
    `  ${dispatch}`,
    ...(route.format === undefined ? [] : [`  format: ${route.format}`]),
    ...skills,
  ]);
}

/** One line per attempt, its agent run below it, a line between series. */
function attemptLines(attempts: Attempt[]): string[] {
  if (attempts.length === 0) return ["  none yet"];
  const lines: string[] = [];
  for (const attempt of withSeries(attempts)) {
    if (attempt.attempt === 1 && attempt.series > 1) lines.push(`  replay ${attempt.series - 1}:`);
    const { startedAtMs, finishedAtMs } = attempt;
    const span = finishedAtMs === null
      ? `${utcTime(startedAtMs)} UTC, not finished`
      : `${utcTime(startedAtMs)} UTC, ${duration(finishedAtMs - startedAtMs)}`;
    const outcome = attempt.error !== null
      ? `failed at ${attempt.step}: ${cut(errorLine(attempt.error), 200)}`
      : finishedAtMs === null
      ? `at ${attempt.step}`
      : "delivered";
    lines.push(`  ${attempt.attempt}. ${span}: ${outcome}`);
    if (attempt.run !== null) lines.push(`     agent: ${runText(attempt.run)}`);
  }
  return lines;
}

/** `openai gpt-4o-mini, 812 prompt + 96 completion tokens, 2.1 s`. */
function runText(run: AgentRun): string {
  const model = run.model === null ? "" : ` ${line(run.model)}`;
  const tokens = run.promptTokens === null || run.completionTokens === null
    ? "tokens not reported"
    : `${run.promptTokens} prompt + ${run.completionTokens} completion tokens`;
  return `${run.provider}${model}, ${tokens}, ${duration(run.durationMs)}`;
}

/** `part 1/2  telegram 42  message 501  2026-03-01 10:00:02 UTC`, and the link when one came. */
function partLine(part: PartReceipt): string {
  const id = part.messageId === null ? "" : `  message ${line(part.messageId)}`;
  const url = part.url === null ? "" : `  ${line(part.url)}`;
  const where = `${part.target} ${line(part.chat)}`;
  return `  part ${part.part}/${part.parts}  ${where}${id}${url}  ${utcTime(part.sentAtMs)} UTC`;
}

/** A titled section: the title, then its lines. */
function section(title: string, lines: string[]): string {
  return [title, ...lines].join("\n");
}

/** A text of several lines, each indented behind `| `, made safe for a terminal. */
function quoted(text: string): string[] {
  return text.split(/\r\n|\r|\n/).map((part) => `  | ${oneTerminalLine(part)}`);
}

/** One line of text from outside, made safe for a terminal. */
function line(text: string): string {
  return oneTerminalLine(text);
}

/** An error message on one line: safe for a terminal, its runs of white space made one space. */
function errorLine(text: string): string {
  return oneTerminalLine(text).replace(/\s+/g, " ");
}

/** The payload as JSON when it parses (it always should), else the text as stored. */
function parsedPayload(payload: string): unknown {
  try {
    return JSON.parse(payload);
  } catch {
    return payload;
  }
}
