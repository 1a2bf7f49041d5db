/**
 * The subscription sources' conformance suite: the file and PostgreSQL (a throwaway server,
 * tests/fakes/postgres.ts, a fresh schema for each test) behave alike for the commands and the
 * gateway: create, change, remove, concurrent updates that lose nothing, a watch that sees a
 * change made elsewhere within a second, and a change that reached no notification caught all
 * the same.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import postgres from "postgres";
import { fileSubscriptionSource } from "../../../lib/subscriptions/file_source.ts";
import { openPostgresSubscriptions } from "../../../lib/subscriptions/postgres_source.ts";
import type { SubscriptionSource } from "../../../lib/subscriptions/source.ts";
import { startPostgres, type ThrowawayPostgres } from "../../fakes/postgres.ts";

/** One place for the records, and what a test does to it. */
interface Place {
  /** A source of the place, as a command or another gateway opens it. */
  open(options?: { pollMs?: number }): Promise<SubscriptionSource>;
  /** Stores `records` behind every source's back: no lock, no notification. */
  writeBehind(records: Record<string, unknown>): Promise<void>;
  remove(): Promise<void>;
}

let server: Promise<ThrowawayPostgres> | undefined;

const places: Record<string, () => Promise<Place>> = {
  file: async () => {
    const home = await Deno.makeTempDir({ prefix: "agent-source-" });
    const path = join(home, "webhook_subscriptions.json");
    return {
      open: () => Promise.resolve(fileSubscriptionSource(path)),
      writeBehind: (records) => Deno.writeTextFile(path, JSON.stringify(records)),
      remove: () => Deno.remove(home, { recursive: true }),
    };
  },
  postgres: async () => {
    server ??= startPostgres();
    const schema = await (await server).createSchema();
    return {
      open: (options) => openPostgresSubscriptions(schema.url, options),
      async writeBehind(records) {
        const sql = postgres(schema.url, { max: 1, onnotice: () => {} });
        try {
          await sql.begin(async (tx) => {
            await tx.unsafe("DELETE FROM subscriptions");
            for (const [name, record] of Object.entries(records)) {
              await tx.unsafe(
                "INSERT INTO subscriptions (name, record) VALUES ($1, $2::text::jsonb)",
                [
                  name,
                  JSON.stringify(record),
                ],
              );
            }
          });
        } finally {
          await sql.end();
        }
      },
      remove: () => schema.drop(),
    };
  },
};

/** Runs `body` on a fresh place, closing every source it opened. */
async function onPlace(
  make: () => Promise<Place>,
  body: (open: Place["open"], place: Place) => Promise<void>,
): Promise<void> {
  const place = await make();
  const sources: SubscriptionSource[] = [];
  try {
    await body(async (options) => {
      const source = await place.open(options);
      sources.push(source);
      return source;
    }, place);
  } finally {
    for (const source of sources) await source.close();
    await place.remove();
  }
}

/** How long `watch.current()` took to show what `seen` looks for, in ms; throws after 3 s. */
async function msUntil(check: () => boolean): Promise<number> {
  const start = performance.now();
  while (!check()) {
    if (performance.now() - start > 3000) throw new Error("the change was never seen");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return performance.now() - start;
}

for (const [kind, make] of Object.entries(places)) {
  Deno.test(`${kind} source: a record is created, changed and removed`, async () => {
    await onPlace(make, async (open) => {
      const source = await open();
      assert.deepEqual(await source.read(), {});
      const existed = await source.update((records) => {
        const had = Object.hasOwn(records, "gh");
        records.gh = { secret: "s-1", events: ["issues"] };
        return had;
      });
      assert.equal(existed, false);
      const other = await open();
      assert.deepEqual(await other.read(), { gh: { secret: "s-1", events: ["issues"] } });
      await other.update((records) => void (records.gh.events = ["push"]));
      assert.deepEqual((await source.read()).gh.events, ["push"]);
      await source.update((records) => void delete records.gh);
      assert.deepEqual(await other.read(), {});
    });
  });

  Deno.test(`${kind} source: a change that throws stores nothing`, async () => {
    await onPlace(make, async (open) => {
      const source = await open();
      await source.update((records) => void (records.a = { secret: "1" }));
      await assert.rejects(
        source.update((records) => {
          delete records.a;
          records.b = { secret: "2" };
          throw new RangeError("changed my mind");
        }),
        RangeError,
      );
      assert.deepEqual(Object.keys(await source.read()), ["a"]);
    });
  });

  Deno.test(`${kind} source: concurrent updates from several sources lose none`, async () => {
    await onPlace(make, async (open) => {
      const sources = await Promise.all([open(), open(), open(), open()]);
      await sources[0].update((records) => void (records.counter = { secret: "0" }));
      await Promise.all(
        sources.flatMap((source, i) =>
          [0, 1, 2, 3, 4].map((j) =>
            source.update(async (records) => {
              const count = Number(records.counter.secret);
              await new Promise((resolve) => setTimeout(resolve, 1)); // widen the race
              records.counter = { secret: String(count + 1) };
              records[`s${i}-${j}`] = { secret: "x" };
            })
          )
        ),
      );
      const records = await sources[3].read();
      assert.equal(records.counter.secret, "20", "every read-modify-write saw the one before");
      assert.equal(Object.keys(records).length, 21);
    });
  });

  Deno.test(`${kind} source: a watch sees a change made elsewhere within a second`, async () => {
    await onPlace(make, async (open) => {
      // No periodic check within the test: only the notification (or the file's stat) tells.
      const gateway = await open({ pollMs: 60_000 });
      const reloads: string[][] = [];
      const watch = await gateway.watch({
        onReload: (records) => reloads.push(Object.keys(records)),
      });
      assert.deepEqual(watch.current(), {});
      const command = await open();
      await command.update((records) => void (records.gh = { secret: "s-1" }));
      const ms = await msUntil(() => Object.hasOwn(watch.current(), "gh"));
      assert.ok(ms < 1000, `seen after ${Math.round(ms)} ms`);
      assert.deepEqual(reloads.at(-1), ["gh"]);
      await command.update((records) => void delete records.gh);
      assert.ok(await msUntil(() => !Object.hasOwn(watch.current(), "gh")) < 1000);
      await watch.stop();
    });
  });

  Deno.test(`${kind} source: a change no one was told of is seen by the periodic check`, async () => {
    await onPlace(make, async (open, place) => {
      const gateway = await open({ pollMs: 200 });
      const watch = await gateway.watch();
      await place.writeBehind({ quiet: { secret: "s-1" } });
      assert.ok(await msUntil(() => Object.hasOwn(watch.current(), "quiet")) < 1000);
      await watch.stop();
    });
  });

  Deno.test(`${kind} source: a record of the wrong type is kept and written back unchanged`, async () => {
    await onPlace(make, async (open, place) => {
      const source = await open();
      await place.writeBehind({ bad: { secret: "s", events: "push" }, ok: { secret: "t" } });
      await source.update((records) => void (records.ok = { secret: "u" }));
      const records = await source.read();
      assert.deepEqual(records.bad, { secret: "s", events: "push" });
      assert.equal(records.ok.secret, "u");
    });
  });
}

Deno.test("postgres source: a watch keeps the last good copy while the server is down", async () => {
  await onPlace(places.postgres, async (open) => {
    const errors: (string | undefined)[] = [];
    const gateway = await open({ pollMs: 100 });
    await gateway.update((records) => void (records.gh = { secret: "s-1" }));
    const watch = await gateway.watch({ onErrorChange: (error) => errors.push(error?.message) });
    const halted = await server!;
    await halted.halt();
    try {
      await msUntil(() => watch.lastError !== undefined);
      assert.match(watch.lastError!.message, /Cannot reach the subscriptions in PostgreSQL/);
      assert.deepEqual(Object.keys(watch.current()), ["gh"], "the last good copy is served");
    } finally {
      await halted.restart();
    }
    const command = await open();
    await command.update((records) => void (records.new = { secret: "s-2" }));
    await msUntil(() => Object.hasOwn(watch.current(), "new"));
    assert.equal(watch.lastError, undefined);
    assert.equal(errors.at(-1), undefined, "said once it reads again");
    await watch.stop();
  });
});

Deno.test("postgres source: the throwaway server stops", async () => {
  await (await server)?.stop();
});
