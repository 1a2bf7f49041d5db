/**
 * A guard against a known crash of the npm `postgres` client under Deno: when the server closes
 * a connection (it stopped, restarted or failed over) while a small write is queued, the write
 * runs after the socket is gone and throws `TypeError: Cannot read properties of null (reading
 * 'write')` from a timer, outside any query's promise, which would end the gateway. The query
 * that write belonged to is already rejected (CONNECTION_CLOSED) by then, so the write has
 * nothing left to do; the guard keeps that one error, and only it, from ending the process.
 * Reported upstream: https://github.com/porsager/postgres/issues/1154 and
 * https://github.com/denoland/deno/issues/34667.
 *
 * @module
 */

let installed = false;

/**
 * Installs the guard, once per process (a second call does nothing).
 * @param onCaught told each time the guard keeps the error from ending the process
 */
export function guardClientWrites(onCaught: () => void = () => {}): void {
  if (installed) return;
  installed = true;
  globalThis.addEventListener("error", (event) => {
    if (!isClosedSocketWrite(event.error)) return;
    event.preventDefault();
    onCaught();
  });
}

/** Whether `error` is the client's write on a connection already closed. */
export function isClosedSocketWrite(error: unknown): boolean {
  if (!(error instanceof TypeError)) return false;
  const stack = error.stack ?? "";
  return /reading 'write'/.test(error.message) && /nextWrite/.test(stack) &&
    /postgres[\\/].*connection\.js/.test(stack);
}
