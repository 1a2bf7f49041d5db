/**
 * What `agent webhook test` and the dashboard's Test button say when the gateway ignored their
 * event for a subscription's filters, or answered 404 for a subscription it does not serve
 * (disabled, or `auth: none` off loopback): the filter that did not hold, and the values it read
 * (docs/subscriptions.md#filters).
 *
 * @module
 */
import type { Route } from "./mod.ts";
import { failedFilter, filterValues } from "./filter.ts";

/**
 * Why the gateway ignored the test event for the route's filters: the first that does not hold
 * on the payload and headers sent, and the value of each field it reads.
 * @param route the route tested
 * @param sent the payload and the headers of the test request
 * @returns the lines to print; none when every filter holds here (the gateway read the
 *   subscription before a change), or the route has none
 * @example
 * ```ts
 * filterHints(route, { payload, headers });
 * // ['Filter 1 of 1, pull_request.base.ref == "main", is false; it read:',
 * //  '  pull_request.base.ref = "develop"']
 * ```
 */
export function filterHints(
  route: Route,
  sent: { payload: unknown; headers: Headers },
): string[] {
  const failure = failedFilter(route.filters, sent);
  if (failure === undefined) return [];
  const { index, expression, reason } = failure;
  const values = filterValues(expression, sent);
  const count = route.filters?.length ?? 0;
  return [
    `Filter ${index} of ${count}, ${expression}, ${reason}` +
    (values.length ? "; it read:" : "."),
    ...values.map((line) => `  ${line}`),
    "Change the payload with --payload, or the filter with agent webhook subscribe " +
    `${route.name} --filter ... (docs/subscriptions.md#filters).`,
  ];
}

/**
 * Why the gateway answered 404 for a route the test found: it is disabled, or it has
 * `auth: none` and the gateway does not listen on a loopback address.
 * @param route the route tested
 * @returns the lines to print; none when the route should be served
 */
export function unservedHints(route: Route): string[] {
  if (route.disabled) {
    return [
      `"${route.name}" is disabled: the gateway answers it as an unknown name. Serve it again ` +
      `with: agent webhook enable ${route.name}`,
    ];
  }
  if (route.auth === "none") {
    return [
      `"${route.name}" has auth none, which the gateway serves only while it listens on a ` +
      "loopback address (127.0.0.1, ::1): its log says where it listens.",
    ];
  }
  return [];
}

/**
 * The `reason` of an `ignored` answer (`filter`, `the gateway's own comment`), if it has one.
 * @param text the answer's body
 */
export function ignoredReason(text: string): string | undefined {
  try {
    const answer = JSON.parse(text) as { status?: unknown; reason?: unknown } | null;
    return answer?.status === "ignored" && typeof answer.reason === "string"
      ? answer.reason
      : undefined;
  } catch {
    return undefined;
  }
}
