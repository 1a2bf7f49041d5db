import assert from "node:assert/strict";
import {
  failedFilter,
  filterProblem,
  filterValues,
  MAX_REGEX_WORK,
} from "../../../lib/subscriptions/filter.ts";
import { githubExample } from "../../fakes/github_examples.ts";

/** A real `pull_request.opened` as GitHub sends it, with its delivery headers. */
function pullRequest(baseRef?: string) {
  const payload = githubExample("pull_request", "opened");
  if (baseRef !== undefined) {
    (payload.pull_request as { base: { ref: string } }).base.ref = baseRef;
  }
  const headers = new Headers({
    "X-GitHub-Event": "pull_request",
    "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    "User-Agent": "GitHub-Hookshot/044aadd",
  });
  return { payload, headers };
}

/** Whether every filter holds on the event. */
function passes(filters: string[], event: { payload: unknown; headers: Headers }): boolean {
  return failedFilter(filters, event) === undefined;
}

Deno.test("failedFilter() lets a real pull request through on its base branch, and not on another", () => {
  assert.equal(passes(['pull_request.base.ref == "main"'], pullRequest("main")), true);
  // The example as GitHub sent it targets master.
  assert.deepEqual(failedFilter(['pull_request.base.ref == "main"'], pullRequest()), {
    index: 1,
    expression: 'pull_request.base.ref == "main"',
    reason: "is false",
  });
  assert.equal(passes(['pull_request.base.ref != "main"'], pullRequest()), true);
});

Deno.test("failedFilter() finds a label named bug in a real issue's list of labels", () => {
  const labeled = { payload: githubExample("issues", "labeled"), headers: new Headers() };
  assert.equal(passes(['issue.labels.exists(l, l.name == "bug")'], labeled), true);
  assert.equal(passes(['issue.labels.exists(l, l.name == "security")'], labeled), false);
  assert.equal(passes(['issue.labels.all(l, l.name in ["bug", "crash"])'], labeled), true);
  assert.equal(passes(['"bug" in issue.labels.map(l, l.name)'], labeled), true);
});

Deno.test("failedFilter() compares numbers, tests membership, presence, text and patterns", () => {
  const payment = {
    payload: {
      type: "payment_intent.succeeded",
      data: { object: { amount: 1500, currency: "eur", description: "Order #4521 (express)" } },
    },
    headers: new Headers(),
  };
  const holding = [
    "data.object.amount > 1000",
    "data.object.amount >= 1500 && data.object.amount < 2000",
    'data.object.currency in ["eur", "usd"]',
    "has(data.object.description)",
    "!has(data.object.refunded)",
    'data.object.description.contains("express")',
    'data.object.description.startsWith("Order")',
    'data.object.description.matches("#[0-9]+")',
    'data.object.currency == "usd" || data.object.amount > 1000',
    '!(data.object.currency == "usd")',
  ];
  for (const filter of holding) assert.equal(passes([filter], payment), true, filter);
  assert.equal(passes(["data.object.amount > 2000"], payment), false);
  // Every filter must hold: the second one decides here.
  assert.equal(failedFilter(holding.concat(["data.object.amount > 2000"]), payment)?.index, 11);
});

Deno.test("failedFilter() reads the request's headers under headers, by lower-case name", () => {
  const event = pullRequest("main");
  assert.equal(passes(['headers["x-github-event"] == "pull_request"'], event), true);
  assert.equal(passes(['headers["user-agent"].startsWith("GitHub-Hookshot/")'], event), true);
  assert.equal(passes(['headers["x-github-event"] == "push"'], event), false);
  assert.equal(passes(['"x-gitlab-event" in headers'], event), false);
});

Deno.test("failedFilter() does not let through an event the filter cannot read", () => {
  const issue = { payload: githubExample("issues", "opened"), headers: new Headers() };
  const failure = failedFilter(['pull_request.base.ref == "main"'], issue);
  assert.match(failure?.reason ?? "", /^could not be evaluated: Unknown variable: pull_request/);
  // Nor a field the payload's objects inherit, nor a value that is not true or false.
  assert.ok(failedFilter(["constructor == 1"], issue));
  assert.equal(failedFilter(["issue.number"], issue)?.reason, "gives 1, not true or false");
  // Absent or empty filters let every event through.
  assert.equal(failedFilter(undefined, issue), undefined);
  assert.equal(failedFilter([], issue), undefined);
});

Deno.test("filterProblem() points at the column of a syntax error and says what it expected", () => {
  assert.equal(
    filterProblem('pull_request.base.ref = "main"'),
    'column 23: Unexpected character: =\n  pull_request.base.ref = "main"\n                        ^',
  );
  assert.match(filterProblem("issue.labels.exists(l l.name)")!, /^column 23: Expected RPAREN/);
  assert.match(filterProblem('action == "opened" &&')!, /^column 22: Unexpected token: EOF/);
  assert.match(filterProblem('title == "oops')!, /Unterminated string/);
  assert.match(filterProblem('title.matches("(")')!, /^column 15: invalid regular expression/);
  assert.match(filterProblem("size(issue.labels) + 1")!, /gives int, where a bool/);
  assert.equal(filterProblem('pull_request.base.ref == "main"'), undefined);
});

Deno.test("filterProblem() refuses what could make an evaluation unbounded", () => {
  // A pattern read from the event: its size is the sender's to choose.
  assert.match(filterProblem("issue.title.matches(issue.body)")!, /written in quotes/);
  // A macro reading the root: a list searched once per element of another.
  assert.match(
    filterProblem("issue.labels.exists(l, l.name == issue.title)")!,
    /issue\.title is read inside a macro/,
  );
  assert.match(
    filterProblem("a.exists(x, x.b.exists(y, y.c.exists(z, z == 1)))")!,
    /nested more than 2 deep/,
  );
  assert.match(filterProblem("x".repeat(1001))!, /longer than 1000 characters/);
  assert.match(filterProblem('title.__re2__("a")')!, /reserved/);
  // Nested over the parts of each element is fine: the work follows the payload's size.
  assert.equal(
    filterProblem('commits.exists(c, c.modified.exists(f, f.startsWith("docs/")))'),
    undefined,
  );
});

Deno.test("a catastrophic pattern ends at once on RE2, and within its work budget on a big payload", () => {
  // On a backtracking engine, these 27 characters alone take seconds; RE2 is linear.
  const small = { payload: { title: `${"a".repeat(27)}!` }, headers: new Headers() };
  const started = performance.now();
  assert.equal(failedFilter(['title.matches("^(a+)+$")'], small)?.reason, "is false");
  assert.ok(performance.now() - started < 500, "evaluated within half a second");
  // Over a megabyte, even linear work is more than a filter may do: it stops before starting.
  const big = { payload: { title: `${"a".repeat(1_000_000)}!` }, headers: new Headers() };
  const again = performance.now();
  const failure = failedFilter(['title.matches("^(a+)+$")'], big);
  assert.ok(performance.now() - again < 500, "evaluated within half a second");
  assert.match(failure?.reason ?? "", /more work than a filter may do/);
  assert.match(failure?.reason ?? "", new RegExp(String(MAX_REGEX_WORK)));
});

Deno.test("filterValues() shows what each path of a filter read, or that it was absent", () => {
  assert.deepEqual(
    filterValues(
      'pull_request.base.ref == "main" && headers["x-github-event"] == "push"',
      pullRequest(),
    ),
    ['pull_request.base.ref = "master"', 'headers["x-github-event"] = "pull_request"'],
  );
  assert.deepEqual(
    filterValues("has(issue.assignee.login)", { payload: { issue: {} }, headers: new Headers() }),
    ["issue.assignee.login = (absent: No such key: assignee)"],
  );
});
