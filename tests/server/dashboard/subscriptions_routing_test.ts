/**
 * The subscription form's transform, conversation and coalescing options
 * (docs/dashboard.md#subscriptions), in-process on a real subscription file: stored as
 * `agent webhook subscribe --transform --session --coalesce` stores them, refused with the
 * command's messages, shown again on the edit form, and removed when emptied.
 */
import assert from "node:assert/strict";
import { readSubscriptions } from "../../../lib/subscriptions/file_store.ts";
import { type DashboardWorld, dashboardWorld, formPost, logIn } from "./_helpers.ts";

/** A form POST in `session`, with its CSRF token: its status and body. */
async function post(
  w: DashboardWorld,
  session: { cookie: string; csrf: string },
  path: string,
  fields: Record<string, string>,
) {
  const response = await w.app.request(path, formPost(session, { _csrf: session.csrf, ...fields }));
  return { status: response.status, body: await response.text() };
}

/** The fields of one of each group: a transform, a conversation, coalescing. */
const ROUTING = {
  name: "issues",
  deliver: "log",
  transform: "jq -c '{title: .issue.title}'",
  "transform-timeout": "12",
  session: "{repository.full_name}#{issue.number}",
  "session-budget": "1500",
  coalesce: "30",
  "coalesce-key": "{issue.number}",
  "coalesce-max": "120",
};

Deno.test("subscription form sets a transform, a conversation and coalescing as subscribe does", async () => {
  await using w = await dashboardWorld();
  const session = await logIn(w);
  const created = await post(w, session, "/subscriptions", ROUTING);
  assert.equal(created.status, 200, created.body);
  const stored = (await readSubscriptions(`${w.home}/webhook_subscriptions.json`)).issues;
  assert.equal(stored.transform, "jq -c '{title: .issue.title}'");
  assert.equal(stored.transform_timeout, 12);
  assert.equal(stored.session, "{repository.full_name}#{issue.number}");
  assert.equal(stored.session_budget, 1500);
  assert.deepEqual([stored.coalesce, stored.coalesce_key, stored.coalesce_max], [
    30,
    "{issue.number}",
    120,
  ]);
  const page = await w.app.request("/subscriptions/issues", {
    headers: { cookie: session.cookie },
  });
  const body = await page.text();
  assert.match(
    body,
    /name="transform" id="f-transform" value="jq -c &#39;\{title: \.issue\.title\}&#39;"/,
  );
  assert.match(body, /name="session-budget" inputmode="numeric" value="1500"/);
  assert.match(body, /name="coalesce-max" inputmode="decimal" value="120"/);
  const { name: _name, ...edit } = ROUTING;
  const emptied = await post(w, session, "/subscriptions/issues", {
    ...edit,
    transform: "",
    "transform-timeout": "",
    session: "",
    "session-budget": "",
    coalesce: "",
    "coalesce-key": "",
    "coalesce-max": "",
  });
  assert.equal(emptied.status, 200, emptied.body);
  const after = (await readSubscriptions(`${w.home}/webhook_subscriptions.json`)).issues;
  const fields = ["transform", "transform_timeout", "session", "session_budget", "coalesce"];
  for (const field of [...fields, "coalesce_key", "coalesce_max"]) {
    assert.equal((after as Record<string, unknown>)[field], undefined, `${field} removed`);
  }
});

Deno.test("subscription form refuses a transform, conversation or coalescing subscribe refuses, with its message", async () => {
  await using w = await dashboardWorld();
  const session = await logIn(w);
  const cases: [Record<string, string>, RegExp][] = [
    [
      { transform: "jq . | head" },
      /--transform &quot;jq \. \| head&quot;: .*operator \| needs a shell/,
    ],
    [{ "transform-timeout": "900" }, /--transform-timeout .*got &quot;900&quot;/],
    [{ "session-budget": "lots" }, /--session-budget must be a whole number of tokens/],
    [
      { session: "{issue.number}", "session-budget": "", "deliver-only": "on" },
      /--session keeps a conversation/,
    ],
    [{ coalesce: "0" }, /--coalesce must be a number of seconds &gt; 0/],
    [{ coalesce: "30" }, /--coalesce needs a key: give --coalesce-key/],
    [
      { coalesce: "300", "coalesce-key": "{a}", "coalesce-max": "60" },
      /--coalesce must be at most --coalesce-max \(60 s\)/,
    ],
  ];
  for (const [fields, message] of cases) {
    const answer = await post(w, session, "/subscriptions", {
      name: "x",
      deliver: "log",
      ...fields,
    });
    assert.equal(answer.status, 400, JSON.stringify(fields));
    assert.match(answer.body, message, JSON.stringify(fields));
  }
  assert.deepEqual(await readSubscriptions(`${w.home}/webhook_subscriptions.json`), {});
});
