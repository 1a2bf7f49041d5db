/**
 * Benchmark of the template engine against a naive regular-expression baseline, rendering a
 * GitHub-style prompt against the `issues.opened` example of `@octokit/webhooks-examples`.
 *
 * Run: `deno bench bench/templates.ts`. The summary prints how many times faster or slower
 * `renderTemplate()` is than the baseline, which does less work: no escapes of literal braces,
 * no prototype-safe lookup, no missing-path report, no cut of long JSON.
 *
 * @module
 */

import examples from "@octokit/webhooks-examples" with { type: "json" };
import { renderTemplate, type TemplateContext } from "../lib/subscriptions/templates.ts";

const definitions = examples as unknown as { name: string; examples: Record<string, unknown>[] }[];
const payload = definitions.find((definition) => definition.name === "issues")!.examples
  .find((example) => example.action === "opened")!;

const context: TemplateContext = { event: "issues", subscription: "gh-issues", deliveryId: "d-1" };
const template = "New {event_type} event ({action}) in {repository.full_name}:\\n\\n" +
  "#{issue.number} {issue.title} by {issue.user.login} ({issue.author_association})\\n" +
  "Labels: {issue.labels.0.name}, state {issue.state}, comments {issue.comments}\\n" +
  "Link: {issue.html_url}\\n\\n{issue.body}\\n\\nDelivery {__delivery_id__}, missing {issue.nope}";

/** No closing brace: the baseline's `[^}]+` backtracks from every `{`, quadratic in length. */
const hostile = "{issue.".repeat(3_000);

function naive(text: string, data: unknown): string {
  return text
    .replace(/\{([^}]+)\}/g, (match, path: string) => {
      const value = path.split(".").reduce<unknown>(
        (node, key) => (node as Record<string, unknown> | undefined)?.[key],
        data,
      );
      if (value === undefined) return match;
      return typeof value === "string" ? value : JSON.stringify(value, null, 2);
    })
    .replaceAll("\\n", "\n")
    .replaceAll("\\t", "\t");
}

Deno.bench("naive String.replace", { group: "render", baseline: true }, () => {
  naive(template, payload);
});

Deno.bench("renderTemplate()", { group: "render" }, () => {
  renderTemplate(template, payload, context);
});

Deno.bench(
  "naive String.replace, 21 kB unclosed braces",
  { group: "hostile", baseline: true },
  () => {
    naive(hostile, payload);
  },
);

Deno.bench("renderTemplate(), 21 kB unclosed braces", { group: "hostile" }, () => {
  renderTemplate(hostile, payload, context);
});
