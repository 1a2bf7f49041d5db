/**
 * parsePayload() on form bodies: the percent-encoded bytes must be UTF-8, as raw bodies must.
 */
import assert from "node:assert/strict";
import { BodyError } from "../../../server/ingest/_body.ts";
import { parsePayload } from "../../../server/ingest/_payload.ts";

const FORM = "application/x-www-form-urlencoded";
const bytes = (text: string) => new TextEncoder().encode(text);

Deno.test("a form payload with percent-encoded UTF-8 is decoded", () => {
  const { value, json } = parsePayload(bytes('payload={"name":"Ren%C3%A9e"}'), FORM);
  assert.deepEqual(value, { name: "Renée" });
  assert.equal(json, '{"name":"Renée"}');
});

Deno.test("a form whose percent-encoded bytes are not UTF-8 is refused with 400", () => {
  for (const body of ['payload={"a":"%FF"}', "x=%C3&payload={}", 'payload={"a":"%ED%A0%80"}']) {
    assert.throws(
      () => parsePayload(bytes(body), FORM),
      (error) =>
        error instanceof BodyError && error.status === 400 && /not valid UTF-8/.test(error.message),
      body,
    );
  }
});

Deno.test("a stray % in a form field is literal text, not an error", () => {
  const { value } = parsePayload(bytes("discount=100%&code=%zz"), FORM);
  assert.deepEqual(value, { discount: "100%", code: "%zz" });
});
