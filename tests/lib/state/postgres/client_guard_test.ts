import assert from "node:assert/strict";
import { isClosedSocketWrite } from "../../../../lib/state/postgres/_client_guard.ts";

/** A TypeError with the message and the top of the stack the client's crash has. */
function thrown(message: string, frame: string): TypeError {
  const error = new TypeError(message);
  error.stack =
    `TypeError: ${message}\n    at ${frame}\n    at runImmediates (ext:core/01_core.js:252:21)`;
  return error;
}

const FRAME = "Immediate.nextWrite (file:///root/.cache/deno/npm/registry.npmjs.org/postgres/" +
  "3.4.9/src/connection.js:255:22)";

Deno.test("the client guard knows the client's write on a closed connection, and nothing else", () => {
  assert.equal(
    isClosedSocketWrite(thrown("Cannot read properties of null (reading 'write')", FRAME)),
    true,
  );
  assert.equal(
    isClosedSocketWrite(
      thrown("Cannot read properties of null (reading 'write')", "main (file:///app/main.ts:1:1)"),
    ),
    false,
    "the same message from our own code still ends the process",
  );
  assert.equal(isClosedSocketWrite(thrown("x is not a function", FRAME)), false);
  assert.equal(
    isClosedSocketWrite(new Error("Cannot read properties of null (reading 'write')")),
    false,
  );
  assert.equal(isClosedSocketWrite("reading 'write'"), false);
});
