/**
 * TLS to PostgreSQL: a server that takes TLS connections only (tests/fakes/postgres.ts, a
 * self-signed certificate for 127.0.0.1) is reached with `?sslmode=require`, or with its
 * certificate trusted (`tlsCaPem`), which refuses a server whose certificate is another's.
 *
 * @module
 */
import assert from "node:assert/strict";
import { StoreUnavailableError } from "../../../../lib/errors.ts";
import { openPostgresStore } from "../../../../lib/state/postgres/mod.ts";
import { startPostgres, type ThrowawayPostgres } from "../../../fakes/postgres.ts";
import { newEvent } from "../_fixtures.ts";

let started: Promise<ThrowawayPostgres> | undefined;
const server = () => started ??= startPostgres({ tls: true });

Deno.test("postgres: a server that takes TLS only is refused without it, reached with sslmode=require", async () => {
  const { url } = await (await server()).createDatabase();
  await assert.rejects(openPostgresStore(url), (error: Error) => {
    assert.ok(error instanceof StoreUnavailableError);
    assert.match(error.message, /no encryption|pg_hba/);
    return true;
  });
  const store = await openPostgresStore(`${url}?sslmode=require`);
  try {
    assert.equal((await store.accept(newEvent())).status, "accepted");
  } finally {
    await store.close();
  }
});

Deno.test("postgres: tlsCaPem trusts that certificate only, and checks the server's name", async () => {
  const tls = await server();
  const { url } = await tls.createDatabase();
  const store = await openPostgresStore(url, { tlsCaPem: tls.caPem });
  try {
    assert.equal((await store.accept(newEvent())).status, "accepted");
  } finally {
    await store.close();
  }
  const other = await startPostgres({ tls: true });
  try {
    await assert.rejects(openPostgresStore(url, { tlsCaPem: other.caPem }), StoreUnavailableError);
    const byName = new URL(url);
    byName.hostname = "localhost"; // not the name the certificate is for
    await assert.rejects(
      openPostgresStore(byName.href, { tlsCaPem: tls.caPem }),
      StoreUnavailableError,
    );
  } finally {
    await other.stop();
  }
});

Deno.test("postgres: the throwaway server of tls_test stops", async () => {
  await (await started)?.stop();
});
