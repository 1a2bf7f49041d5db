import assert from "node:assert/strict";
import { asRecord, keepExactNumber, valueAt } from "../../../lib/subscriptions/payload.ts";

Deno.test("valueAt() finds what {path} finds: own keys, array indexes, keys holding dots; undefined otherwise", () => {
  const push = { repository: { full_name: "o/r" }, commits: [{ id: "a1" }], "a.b": 1 };
  assert.equal(valueAt(push, "repository.full_name"), "o/r");
  assert.equal(valueAt(push, "commits.0.id"), "a1");
  assert.equal(valueAt(push, "a.b"), 1);
  assert.equal(valueAt(push, "repository.constructor"), undefined, "not the prototype's");
  assert.equal(valueAt(push, "commits.1.id"), undefined);
});

Deno.test("keepExactNumber() keeps an integer past 2^53 as written, and leaves other numbers", () => {
  const payload = JSON.parse('{"id": 12345678901234567891, "n": 42, "x": 1.5}', keepExactNumber);
  assert.equal(JSON.stringify(payload), '{"id":12345678901234567891,"n":42,"x":1.5}');
});

Deno.test("asRecord() gives an object's fields, and undefined for null, arrays and scalars", () => {
  assert.deepEqual(asRecord({ a: 1 }), { a: 1 });
  for (const value of [null, [1], "text", 3, undefined]) assert.equal(asRecord(value), undefined);
});
