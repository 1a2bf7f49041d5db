import assert from "node:assert/strict";
import {
  eventInfo,
  eventLabel,
  matchedEventType,
  matchesEvents,
  MAX_ID_CHARS,
  payloadTypeField,
} from "../../../lib/subscriptions/event_info.ts";
import { githubExample } from "../../fakes/github_examples.ts";

let generated = 0;
const newId = () => `generated-${++generated}`;

/** GitLab's documented pipeline event, trimmed. */
const gitlabPipeline = {
  object_kind: "pipeline",
  object_attributes: { id: 31, iid: 3, ref: "master", status: "success", stages: ["build"] },
  project: { id: 1, path_with_namespace: "gitlab-org/gitlab-test" },
};

/** GitLab's documented merge request event, trimmed: its action lives in object_attributes. */
const gitlabMergeRequest = {
  object_kind: "merge_request",
  event_type: "merge_request",
  object_attributes: { iid: 1, action: "open", title: "MS-Viewport" },
};

/** A Stripe event object (https://docs.stripe.com/api/events/object), trimmed. */
const stripeEvent = {
  id: "evt_1NG8Du2eZvKYlo2CUI79vXWy",
  object: "event",
  type: "payment_intent.succeeded",
  data: { object: { id: "pi_3NG8", object: "payment_intent", amount: 2000 } },
};

Deno.test("eventInfo() reads a GitHub issues.opened delivery", () => {
  const headers = new Headers({
    "X-GitHub-Event": "issues",
    "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    "X-Hub-Signature-256": "sha256=00",
  });
  assert.deepEqual(eventInfo(headers, githubExample("issues", "opened"), newId), {
    type: "issues",
    action: "opened",
    deliveryId: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    generatedDeliveryId: false,
    source: "github",
  });
});

Deno.test("eventInfo() reads a GitHub pull_request.opened and a push without action", () => {
  const pr = eventInfo(
    new Headers({ "X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "d1" }),
    githubExample("pull_request", "opened"),
    newId,
  );
  assert.equal(eventLabel(pr), "pull_request.opened");
  const push = eventInfo(
    new Headers({ "X-GitHub-Event": "push", "X-GitHub-Delivery": "d2" }),
    githubExample("push"),
    newId,
  );
  assert.equal(push.action, undefined);
  assert.ok(!("action" in push), "an absent action is not a key holding undefined");
  assert.equal(eventLabel(push), "push");
});

Deno.test("eventInfo() takes a GitLab type from object_kind and the id from the UUID", () => {
  const headers = new Headers({
    "X-Gitlab-Event": "Pipeline Hook",
    "X-Gitlab-Event-UUID": "13792a34-cac6-4fda-95a8-c58e00a3954e",
    "X-Gitlab-Token": "secret",
  });
  assert.deepEqual(eventInfo(headers, gitlabPipeline, newId), {
    type: "pipeline",
    deliveryId: "13792a34-cac6-4fda-95a8-c58e00a3954e",
    generatedDeliveryId: false,
    source: "gitlab",
  });
});

Deno.test("eventInfo() falls back to the GitLab header, lowercased, without Hook", () => {
  const headers = new Headers({ "X-Gitlab-Event": "Merge Request Hook" });
  assert.equal(eventInfo(headers, {}, newId).type, "merge_request");
  assert.equal(eventInfo(headers, gitlabMergeRequest, newId).type, "merge_request");
  const system = new Headers({ "X-Gitlab-Event": "System Hook" });
  assert.equal(eventInfo(system, { event_name: "project_create" }, newId).type, "system");
});

Deno.test("eventInfo() reads Stripe's type and its payload id as the delivery id", () => {
  const headers = new Headers({ "Stripe-Signature": "t=1700000000,v1=00" });
  assert.deepEqual(eventInfo(headers, stripeEvent, newId), {
    type: "payment_intent.succeeded",
    deliveryId: "evt_1NG8Du2eZvKYlo2CUI79vXWy",
    generatedDeliveryId: false,
    source: "stripe",
  });
});

Deno.test("eventInfo() ignores a payload id when Stripe did not sign the request", () => {
  const info = eventInfo(new Headers(), stripeEvent, () => "fresh");
  assert.equal(info.deliveryId, "fresh");
  assert.equal(info.generatedDeliveryId, true);
  assert.equal(info.source, "other");
});

Deno.test("eventInfo() reads a Standard Webhooks delivery", () => {
  for (const prefix of ["webhook", "svix"]) {
    const headers = new Headers({
      [`${prefix}-id`]: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
      [`${prefix}-timestamp`]: "1674087231",
      [`${prefix}-signature`]: "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
    });
    const info = eventInfo(headers, { type: "invoice.paid", data: {} }, newId);
    assert.deepEqual(info, {
      type: "invoice.paid",
      deliveryId: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
      generatedDeliveryId: false,
      source: "standard",
    });
  }
});

Deno.test("eventInfo() takes the type from type, then event_type, then event", () => {
  const info = (payload: unknown) => eventInfo(new Headers(), payload, newId).type;
  assert.equal(info({ type: "a", event_type: "b", event: "c" }), "a");
  assert.equal(info({ type: 3, event_type: "b", event: "c" }), "b");
  assert.equal(info({ event: "c" }), "c");
  assert.equal(info({ event: { type: "nested" } }), "unknown");
  assert.equal(info([{ type: "in an array" }]), "unknown");
  assert.equal(info("a string payload"), "unknown");
  assert.equal(info(null), "unknown");
});

Deno.test("eventInfo() takes a Shopify event's type from X-Shopify-Topic, its only home", () => {
  const headers = new Headers({
    "X-Shopify-Topic": "orders/create",
    "X-Shopify-Webhook-Id": "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
  });
  // An order: the resource itself, with no field that names the event.
  const order = { id: 820982911946154500, email: "jon@example.com", total_price: "403.00" };
  const info = eventInfo(headers, order, newId, "shopify");
  assert.equal(info.type, "orders/create");
  assert.equal(info.deliveryId, "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043");
  assert.equal(info.source, "other");
  // Another scheme's sender does not get to name its type with Shopify's header.
  assert.equal(eventInfo(headers, { type: "deploy" }, newId, "bearer").type, "deploy");
});

Deno.test("payloadTypeField() names the payload field eventInfo() takes the type from", () => {
  assert.deepEqual(payloadTypeField({ type: 3, event_type: "b" }), {
    field: "event_type",
    type: "b",
  });
  assert.equal(payloadTypeField({ event: { type: "app_mention" } }), undefined);
  assert.equal(payloadTypeField({ type: "" }), undefined);
  assert.equal(payloadTypeField(null), undefined);
});

Deno.test("eventInfo() prefers the GitHub header to a payload type", () => {
  const headers = new Headers({ "X-GitHub-Event": "workflow_run" });
  assert.equal(eventInfo(headers, { type: "forged" }, newId).type, "workflow_run");
});

Deno.test("eventInfo() takes delivery id headers in the order docs/http.md gives", () => {
  const all: [string, string][] = [
    ["X-GitHub-Delivery", "github"],
    ["X-Gitlab-Event-UUID", "gitlab"],
    ["Idempotency-Key", "idempotency"],
    ["webhook-id", "standard"],
    ["svix-id", "svix"],
    ["X-Shopify-Webhook-Id", "shopify"],
    ["X-Request-ID", "request"],
  ];
  for (let i = 0; i < all.length; i++) {
    const headers = new Headers(all.slice(i));
    assert.equal(eventInfo(headers, {}, newId).deliveryId, all[i][1]);
  }
  const stripe = new Headers([["Stripe-Signature", "t=1,v1=00"], ...all.slice(5)]);
  assert.equal(eventInfo(stripe, { id: "evt_1" }, newId).deliveryId, "evt_1");
});

Deno.test("eventInfo() generates an id when the sender gave none", () => {
  const info = eventInfo(new Headers({ "Content-Type": "application/json" }), {}, () => "uuid-1");
  assert.equal(info.deliveryId, "uuid-1");
  assert.equal(info.generatedDeliveryId, true);
});

Deno.test(`eventInfo() ignores ids over ${MAX_ID_CHARS} characters or with control characters`, () => {
  const longest = "x".repeat(MAX_ID_CHARS);
  const kept = eventInfo(new Headers({ "X-Request-ID": longest }), {}, newId);
  assert.equal(kept.deliveryId, longest);
  const tooLong = new Headers({ "X-GitHub-Delivery": longest + "x", "X-Request-ID": "next" });
  assert.equal(eventInfo(tooLong, {}, newId).deliveryId, "next");
  const stripe = new Headers({ "Stripe-Signature": "t=1,v1=00" });
  const control = eventInfo(stripe, { id: "evt_1\n" }, () => "fresh");
  assert.deepEqual([control.deliveryId, control.generatedDeliveryId], ["fresh", true]);
  assert.equal(eventInfo(new Headers(), { type: "a\u0085b" }, newId).type, "unknown");
});

Deno.test("eventInfo() reads only own payload fields", () => {
  const inherited = Object.create({ type: "inherited", action: "x", id: "evt_inherited" });
  const info = eventInfo(new Headers({ "Stripe-Signature": "t=1,v1=00" }), inherited, () => "new");
  assert.deepEqual(info, {
    type: "unknown",
    deliveryId: "new",
    generatedDeliveryId: true,
    source: "stripe",
  });
  const parsed = JSON.parse('{"__proto__": {"type": "polluted"}}');
  assert.equal(eventInfo(new Headers(), parsed, newId).type, "unknown");
});

Deno.test("eventInfo() ignores an action that is not a string", () => {
  const info = eventInfo(new Headers({ "X-GitHub-Event": "x" }), { action: { a: 1 } }, newId);
  assert.equal(eventLabel(info), "x");
});

Deno.test("matchesEvents() lets everything through without a filter", () => {
  assert.ok(matchesEvents(undefined, { type: "issues" }));
  assert.ok(matchesEvents([], { type: "issues", action: "opened" }));
});

Deno.test("matchesEvents() matches the type or type.action exactly", () => {
  const opened = { type: "issues", action: "opened" };
  assert.ok(matchesEvents(["issues"], opened));
  assert.ok(matchesEvents(["push", "issues.opened"], opened));
  assert.ok(!matchesEvents(["issues.closed"], opened));
  assert.ok(!matchesEvents(["Issues"], opened));
  assert.ok(!matchesEvents(["issue"], opened));
  assert.ok(!matchesEvents(["issues."], { type: "issues" }));
  assert.ok(matchesEvents(["payment_intent.succeeded"], { type: "payment_intent.succeeded" }));
  assert.ok(!matchesEvents(["payment_intent"], { type: "payment_intent.succeeded" }));
});

Deno.test("matchesEvents() filters real GitHub deliveries", () => {
  const info = eventInfo(
    new Headers({ "X-GitHub-Event": "pull_request" }),
    githubExample("pull_request", "opened"),
    newId,
  );
  assert.ok(matchesEvents(["pull_request.opened"], info));
  assert.ok(!matchesEvents(["issues", "pull_request.closed"], info));
});

Deno.test("eventLabel() joins type and action with a dot", () => {
  assert.equal(eventLabel({ type: "issues", action: "opened" }), "issues.opened");
  assert.equal(eventLabel({ type: "pipeline" }), "pipeline");
});

Deno.test("matchedEventType() gives the filter's name that let the event through, the more specific first", () => {
  const opened = { type: "pull_request", action: "opened" };
  assert.equal(matchedEventType(undefined, opened), "pull_request.opened");
  assert.equal(matchedEventType([], opened), "pull_request.opened");
  assert.equal(matchedEventType(["push", "pull_request"], opened), "pull_request");
  assert.equal(
    matchedEventType(["pull_request", "pull_request.opened"], opened),
    "pull_request.opened",
  );
  assert.equal(matchedEventType(["pull_request.closed"], opened), undefined);
  assert.equal(
    matchedEventType(["payment_intent.succeeded"], { type: "payment_intent.succeeded" }),
    "payment_intent.succeeded",
  );
});
