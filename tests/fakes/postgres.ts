/**
 * A throwaway PostgreSQL server for tests: Debian's `postgresql` package (installed with apt-get
 * when missing, as `.ci/run` does), its `initdb` and `pg_ctl` run on a temporary data folder and
 * a free loopback port. Run as root (CI, the tests), they run as the `postgres` user, since the
 * server refuses to run as root.
 *
 * One server serves a whole test file: {@link ThrowawayPostgres.createDatabase} gives each test a
 * fresh, empty database on it, which is much faster than a server of its own.
 *
 * @example A test file's server
 * ```ts
 * const server = await startPostgres();
 * const { url, drop } = await server.createDatabase();
 * // ... open a store on `url`, then:
 * await drop();
 * await server.stop();
 * ```
 *
 * @module
 */
import postgres from "postgres";

/** A running server, with what tests do to it. */
export interface ThrowawayPostgres {
  /**
   * `postgres://agent:<password>@127.0.0.1:<port>/postgres`: the maintenance database (with
   * `tls`, reached by adding `?sslmode=require`, or trusting {@link caPem}).
   */
  readonly url: string;
  /** The loopback port it listens on. */
  readonly port: number;
  /** With `tls`: the server's self-signed certificate, in PEM, which a client may trust. */
  readonly caPem?: string;
  /**
   * Creates an empty database on the server.
   * @returns its URL, and `drop()`, which ends its connections and deletes it
   */
  createDatabase(): Promise<{ url: string; drop(): Promise<void> }>;
  /**
   * Creates an empty schema in the maintenance database: a fresh place for tables, much quicker
   * to make than a database.
   * @returns a URL whose connections use it (`?search_path=<schema>`), and `drop()`, which
   *   deletes it with all it holds
   */
  createSchema(): Promise<{ url: string; drop(): Promise<void> }>;
  /**
   * Stops the server as a crash would (`pg_ctl stop -m immediate`): open connections break,
   * new ones are refused, and what was committed survives. {@link restart} brings it back.
   */
  halt(): Promise<void>;
  /** Starts the server again, on the same data and port, after {@link halt}. */
  restart(): Promise<void>;
  /** Stops the server and deletes its data folder; a second call does nothing. */
  stop(): Promise<void>;
}

/** Debian's `postgresql` puts each major version's programs in `/usr/lib/postgresql/<N>/bin`. */
const DEBIAN_ROOT = "/usr/lib/postgresql";

/** The role the tests connect as. */
const ROLE = "agent";

/**
 * Starts a throwaway server, installing Debian's `postgresql` first when it is missing.
 * @param options `tls`: the server takes TLS connections only, with a self-signed certificate
 *   for 127.0.0.1 ({@link ThrowawayPostgres.caPem}); `durable`: commits are flushed to disk, as
 *   a real server's are (benchmarks), instead of `fsync=off`
 * @returns the running server; {@link ThrowawayPostgres.stop} removes it
 * @throws Error with the programs' output when the install, `initdb` or `pg_ctl start` fails
 */
export async function startPostgres(
  options: { tls?: boolean; durable?: boolean } = {},
): Promise<ThrowawayPostgres> {
  const bin = await postgresBin();
  const dir = await Deno.makeTempDir({ prefix: "agent-postgres-" });
  const asOwner = ownerOf(dir);
  await asOwner.chownDir();
  const data = `${dir}/data`;
  const password = await initCluster(bin, { dir, data, asOwner });
  const tls = options.tls ? await requireTls({ dir, data, asOwner }) : undefined;
  const port = freePort();
  // Loopback only, no Unix socket in a shared folder; no fsync, as a test's data is thrown away.
  const settings = `-c listen_addresses=127.0.0.1 -c port=${port} -c unix_socket_directories=` +
    `${options.durable ? "" : " -c fsync=off -c full_page_writes=off"}` +
    ` -c max_connections=200${tls?.settings ?? ""}`;
  const start = () =>
    asOwner.run(`${bin}/pg_ctl`, [
      "start",
      "--wait",
      "--pgdata",
      data,
      "--log",
      `${dir}/server.log`,
      "--options",
      settings,
    ], `${dir}/server.log`);
  await start();
  const url = `postgres://${ROLE}:${password}@127.0.0.1:${port}/postgres`;
  let stopped = false;
  const halt = (mode: "immediate" | "fast") =>
    asOwner.run(`${bin}/pg_ctl`, ["stop", "--wait", "--pgdata", data, "--mode", mode]);
  // A test file whose last test (the one that stops it) was filtered out or failed to run
  // still leaves no server behind: the stop runs when the file's module unloads.
  const onUnload = () => {
    if (stopped) return;
    stopped = true;
    asOwner.runSync(`${bin}/pg_ctl`, ["stop", "--pgdata", data, "--mode", "immediate"]);
    Deno.removeSync(dir, { recursive: true });
  };
  globalThis.addEventListener("unload", onUnload);
  return {
    url,
    port,
    caPem: tls?.caPem,
    createDatabase: () => createDatabase(url, tls !== undefined),
    createSchema: () => createSchema(url, tls !== undefined),
    halt: () => halt("immediate"),
    restart: start,
    async stop() {
      if (stopped) return;
      stopped = true;
      globalThis.removeEventListener("unload", onUnload);
      await halt("fast").catch(() => {/* already stopped (halted) */});
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** What the folder's owner runs: see {@link ownerOf}. */
type Owner = ReturnType<typeof ownerOf>;

/**
 * Creates the cluster with `initdb`: role {@link ROLE} with a random password, which loopback
 * connections must give (SCRAM).
 * @returns the password
 */
async function initCluster(
  bin: string,
  { dir, data, asOwner }: { dir: string; data: string; asOwner: Owner },
): Promise<string> {
  const password = crypto.randomUUID();
  await Deno.writeTextFile(`${dir}/password`, password);
  await asOwner.chown(`${dir}/password`);
  await asOwner.run(`${bin}/initdb`, [
    "--pgdata",
    data,
    "--username",
    ROLE,
    "--pwfile",
    `${dir}/password`,
    "--auth-host=scram-sha-256",
    "--auth-local=trust",
    "--no-sync",
    "--no-instructions",
    "--encoding=UTF8",
    "--locale=C",
  ]);
  return password;
}

/**
 * Makes the server take TLS connections only: a self-signed certificate for 127.0.0.1 (openssl),
 * and `hostssl` the only loopback line of `pg_hba.conf`.
 * @returns the certificate in PEM, and the server settings that turn TLS on
 */
async function requireTls(
  { dir, data, asOwner }: { dir: string; data: string; asOwner: Owner },
): Promise<{ caPem: string; settings: string }> {
  const [cert, key] = [`${dir}/server.crt`, `${dir}/server.key`];
  await run("openssl", [
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "1",
    "-subj",
    "/CN=127.0.0.1",
    "-addext",
    "subjectAltName=IP:127.0.0.1",
    "-keyout",
    key,
    "-out",
    cert,
  ]);
  await Deno.chmod(key, 0o600);
  for (const file of [cert, key]) await asOwner.chown(file);
  await Deno.writeTextFile(
    `${data}/pg_hba.conf`,
    "local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n",
  );
  return {
    caPem: await Deno.readTextFile(cert),
    settings: ` -c ssl=on -c ssl_cert_file=${cert} -c ssl_key_file=${key}`,
  };
}

/** A fresh schema in the maintenance database, and how to drop it. */
async function createSchema(
  url: string,
  tls: boolean,
): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `test_${crypto.randomUUID().replaceAll("-", "")}`;
  const admin = () => postgres(url, { max: 1, onnotice: () => {}, ssl: tls ? "require" : false });
  const sql = admin();
  try {
    await sql.unsafe(`CREATE SCHEMA ${name}`);
  } finally {
    await sql.end();
  }
  const own = new URL(url);
  own.searchParams.set("search_path", name);
  return {
    url: own.href,
    async drop() {
      const sql = admin();
      try {
        await sql.unsafe(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
      } finally {
        await sql.end();
      }
    },
  };
}

/** A fresh database on the server, and how to drop it. */
async function createDatabase(
  url: string,
  tls: boolean,
): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `test_${crypto.randomUUID().replaceAll("-", "")}`;
  const admin = postgres(url, { max: 1, onnotice: () => {}, ssl: tls ? "require" : false });
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const own = new URL(url);
  own.pathname = `/${name}`;
  return {
    url: own.href,
    async drop() {
      const sql = postgres(url, { max: 1, onnotice: () => {}, ssl: tls ? "require" : false });
      try {
        await sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await sql.end();
      }
    },
  };
}

/**
 * The folder of the newest installed major version's programs, installing Debian's
 * `postgresql` first when none is (the tests run as root, as CI does).
 */
async function postgresBin(): Promise<string> {
  const installed = async () => {
    const versions: number[] = [];
    try {
      for await (const entry of Deno.readDir(DEBIAN_ROOT)) {
        if (/^\d+$/.test(entry.name)) versions.push(Number(entry.name));
      }
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    const newest = Math.max(...versions);
    return versions.length ? `${DEBIAN_ROOT}/${newest}/bin` : undefined;
  };
  const found = await installed();
  if (found) return found;
  for (const args of [["update", "-qq"], ["install", "-y", "-qq", "postgresql"]]) {
    await run("apt-get", args, { env: { DEBIAN_FRONTEND: "noninteractive" } });
  }
  const bin = await installed();
  if (!bin) throw new Error(`apt-get installed postgresql, but ${DEBIAN_ROOT} holds no version`);
  return bin;
}

/** Runs programs as the user who owns the data folder: `postgres` when the tests run as root. */
function ownerOf(dir: string) {
  const root = Deno.uid() === 0;
  const ids = root ? postgresIds() : undefined;
  return {
    chownDir: () => ids ? Deno.chown(dir, ids.uid, ids.gid) : Promise.resolve(),
    chown: (path: string) => ids ? Deno.chown(path, ids.uid, ids.gid) : Promise.resolve(),
    run: (program: string, args: string[], log?: string) =>
      root
        ? run("runuser", ["-u", "postgres", "--", program, ...args], { log })
        : run(program, args, { log }),
    /** Runs a program to its end, however it ends: for the unload handler, which cannot wait. */
    runSync(program: string, args: string[]) {
      const [command, ...rest] = root ? ["runuser", "-u", "postgres", "--", program] : [program];
      new Deno.Command(command, { args: [...rest, ...args], stdout: "null", stderr: "null" })
        .outputSync();
    },
  };
}

/** The `postgres` user's ids, from /etc/passwd (the package creates the user). */
function postgresIds(): { uid: number; gid: number } {
  const line = Deno.readTextFileSync("/etc/passwd").split("\n")
    .find((entry) => entry.startsWith("postgres:"));
  if (!line) throw new Error("no postgres user in /etc/passwd: is Debian's postgresql installed?");
  const [, , uid, gid] = line.split(":");
  return { uid: Number(uid), gid: Number(gid) };
}

/** Runs a program to its end; throws with its output (and the server's log) when it fails. */
async function run(
  program: string,
  args: string[],
  options: { env?: Record<string, string>; log?: string } = {},
): Promise<void> {
  const result = await new Deno.Command(program, {
    args,
    env: options.env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (result.success) return;
  const text = new TextDecoder();
  const log = options.log ? await Deno.readTextFile(options.log).catch(() => "") : "";
  throw new Error(
    `${program} ${args.join(" ")} failed (exit ${result.code})\n` +
      text.decode(result.stdout) + text.decode(result.stderr) + log,
  );
}

/** A loopback port nothing listens on now. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}
