/**
 * The Test button of a subscription's page (docs/dashboard.md#subscriptions): what `agent
 * webhook test` does, from the dashboard. It signs a test event with the route's secret, posts
 * it to this gateway's webhook listener, and says the answer, what it means, and where the
 * event's page is, whose story then follows live.
 *
 * @module
 */
import { parseTestPayload } from "../../lib/subscriptions/test_event.ts";
import {
  prepareTest,
  sendTest,
  testedRoute,
  testGatewayUrl,
} from "../../lib/subscriptions/test_send.ts";
import type { Notice } from "./_subscriptions_page.tsx";
import type { SubscriptionForm } from "./_subscriptions_save.ts";
import type { AppParts } from "./mod.ts";

/** How long the Test button waits for the gateway's answer, in ms. */
const ANSWER_TIMEOUT_MS = 10_000;

/**
 * Sends a test event to the route called `name`.
 * @param name the route's name
 * @param options `parts`: the configuration and the clock; `form`: `event` (default `test`)
 *   and `payload` (a JSON object; blank: a small one that says it is a test)
 * @returns what to say: the gateway's answer and its hints, and a link to the event it took
 * @throws UsageError for a payload that is no JSON object, or an event type the scheme's
 *   senders could not send
 * @throws NotFoundError when no route has the name
 * @throws ConfigError when the subscription file cannot be read
 */
export async function runTest(
  name: string,
  options: { parts: AppParts; form: SubscriptionForm },
): Promise<Notice> {
  const { parts, form } = options;
  const payloadText = form.payload?.trim() ? form.payload : undefined;
  const payload = parseTestPayload(payloadText);
  const tested = await testedRoute(parts.config, name);
  if ("refused" in tested) return { ok: false, text: tested.refused };
  const test = prepareTest(tested.route, {
    payload,
    event: form.event?.trim() ? form.event : "test",
    nowMs: parts.now(),
  });
  const answer = await sendTest(test, {
    secret: tested.secret,
    baseUrl: await testGatewayUrl(parts.config),
    nowMs: parts.now(),
    fetch,
    timeoutMs: ANSWER_TIMEOUT_MS,
  });
  if (answer.kind !== "answered") return { ok: false, text: answer.message, lines: test.notes };
  const ok = answer.status >= 200 && answer.status < 300;
  const text = `Test event "${test.label}" sent: POST ${answer.url}\n` +
    `${answer.status} ${answer.statusText}\n${answer.text}`;
  const lines = [...test.notes, ...answer.hints];
  if (answer.eventId === undefined) return { ok, text, lines };
  const link = {
    href: `/events/${encodeURIComponent(answer.eventId)}`,
    text: `See what becomes of it: event ${answer.eventId}`,
  };
  return { ok, text, lines, link };
}
