/**
 * The Worker of `npm run bench:hub -- --simulated | --days N | --incident`: the production
 * Worker with the webhook objects on a platform that enforces the 6 requests waiting for
 * headers per I/O context (test/support/webhooks/io-context.ts), and on a clock that
 * `POST /__bench/clock` moves ahead, their stored alarms with it. `GET /__bench/platform`
 * answers what the contexts went through, `GET /__bench/invocations` the most D1 calls and
 * subrequests one invocation made (src/bench/invocations.ts), `GET /__bench/storage` and
 * `GET /__bench/objects` the objects' SQLite sizes and rows. The objects are the production
 * classes with two bench-only methods (`benchShift`, `benchFigures`). Never deployed. How
 * each mode works: docs/development.md § Benchmarks.
 */
import type { DurableObject } from "cloudflare:workers";
import worker, { WebhookCourier as Courier, SchoolHub as Hub } from "../src/bench/entry";
import { countedEnv, countInvocations, countSubrequest, invocation, invocationFigures, resetInvocations } from "../src/bench/invocations";
import { CLOUDFLARE, usePlatform, useStorageSeam } from "../src/webhooks/platform/platform";
import { IoContext } from "../test/support/webhooks/io-context";

/** How far the objects' clock is ahead of the wall clock (ms); only `POST /__bench/clock` moves it. */
let offsetMs = 0;

/** An object's storage, rows and alarm as `GET /__bench/objects` answers them. */
interface ObjectFigures {
  /** `sql.databaseSize` (bytes). */
  bytes: number;
  /** Rows per table of the object's own schema, plus `kv`: its key-value entries. */
  rows: Record<string, number>;
  /** Its alarm in the objects' clock (ms), or `null`. */
  alarm: number | null;
}

/** The figures of one object's storage (its raw storage, not the seam's). */
async function figuresOf(storage: DurableObjectStorage): Promise<ObjectFigures> {
  const sql = storage.sql;
  const tables = sql
    .exec<{ name: string }>(
      `SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, 7) <> 'sqlite_' AND substr(name, 1, 4) <> '_cf_' AND substr(name, 1, 12) <> '__miniflare_' ORDER BY name`,
    )
    .toArray();
  const rows: Record<string, number> = {};
  // A count walks the table: fine for a benchmark's once-a-day look, never done by the service.
  for (const { name } of tables) rows[name] = sql.exec<{ n: number }>(`SELECT count(*) AS n FROM "${name}"`).one().n;
  rows.kv = [...storage.kv.list()].length;
  const alarm = await storage.getAlarm();
  return { bytes: sql.databaseSize, rows, alarm: alarm === null ? null : alarm + offsetMs };
}

/** Moves the stored (wall-clock) alarm `ms` earlier: the objects' clock moved `ms` ahead. */
async function shiftAlarm(storage: DurableObjectStorage, ms: number): Promise<void> {
  const at = await storage.getAlarm();
  if (at !== null) await storage.setAlarm(Math.max(Date.now(), at - ms));
}

/** A webhook object class: the production hub or courier (constructed with `ctx`, `env`). */
// biome-ignore lint/suspicious/noExplicitAny: the constructor type TypeScript requires of a mixin's base.
type ObjectClass = new (...args: any[]) => DurableObject<Env>;

/** `Base` with its D1 calls counted per invocation, plus the long run's two methods. */
function benchObject<T extends ObjectClass>(Base: T) {
  return class extends Base {
    readonly benchStorage: DurableObjectStorage;
    // A mixin's constructor takes `any[]` (TypeScript's rule); the runtime passes (ctx, env).
    // biome-ignore lint/suspicious/noExplicitAny: the constructor TypeScript requires of a mixin.
    constructor(...args: any[]) {
      super(args[0] as DurableObjectState, countedEnv(args[1] as Env, { stubs: false }));
      this.benchStorage = (args[0] as DurableObjectState).storage;
    }
    /** The clock moved `ms` ahead: the alarm with it. */
    benchShift(ms: number): Promise<void> {
      return shiftAlarm(this.benchStorage, ms);
    }
    /** Its storage figures. */
    benchFigures(): Promise<ObjectFigures> {
      return figuresOf(this.benchStorage);
    }
  };
}

/** The production hub, benchmarked. */
export const SchoolHub = benchObject(Hub);
type SchoolHub = InstanceType<typeof SchoolHub>;
/** The production courier, benchmarked. */
export const WebhookCourier = benchObject(Courier);
type WebhookCourier = InstanceType<typeof WebhookCourier>;

// Each call the runtime makes of an object (request, RPC method, alarm) is one invocation.
countInvocations(SchoolHub, "hub");
countInvocations(WebhookCourier, "courier");

// The objects' alarms in their clock: stored at the wall-clock instant, read back shifted.
useStorageSeam(
  (storage) =>
    new Proxy(storage, {
      get(target, prop) {
        if (prop === "getAlarm") return async (o?: DurableObjectGetAlarmOptions) => ((at) => (at === null ? null : at + offsetMs))(await target.getAlarm(o));
        if (prop === "setAlarm") return (at: number | Date, o?: DurableObjectSetAlarmOptions) => target.setAlarm(Number(at) - offsetMs, o);
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    }),
);

const contexts: { kind: string; io: IoContext; calls: number }[] = [];

usePlatform((objectId, kind) => {
  const context = { kind, io: new IoContext(`${kind}:${objectId.slice(0, 12)}#${contexts.length + 1}`), calls: 0 };
  contexts.push(context);
  const { io } = context;
  return {
    now: () => CLOUDFLARE.now() + offsetMs,
    setTimer: CLOUDFLARE.setTimer,
    fetch: (url, init) => {
      countSubrequest();
      return io.request(() => fetch(url, init), init.signal);
    },
    // Every call from one object to another goes through here: counted at the stubs.
    call: (send) => {
      context.calls += 1;
      countSubrequest();
      return io.request(() => Promise.resolve(send()));
    },
  };
});

/** What the I/O contexts of one kind (or all) went through. */
function stats(of: { kind: string; io: IoContext; calls: number }[]) {
  return {
    contexts: of.length,
    calls: of.reduce((n, c) => n + c.calls, 0),
    maxWaiting: Math.max(0, ...of.map((c) => c.io.maxWaiting)),
    queuedEver: of.reduce((n, c) => n + c.io.queuedEver, 0),
    requests: of.reduce((n, c) => n + c.io.started, 0),
  };
}

/** The hubs of the schools and the couriers of the registrations named in `url`'s `schools=` and `hooks=` (comma-separated). */
function named(env: Env, url: URL) {
  const list = (p: string) => (url.searchParams.get(p) ?? "").split(",").filter(Boolean);
  // The bindings serve this entry's classes (wrangler binds the exported names).
  const hubs = env.SCHOOL_HUB as unknown as DurableObjectNamespace<SchoolHub>;
  const couriers = env.WEBHOOK_COURIER as unknown as DurableObjectNamespace<WebhookCourier>;
  return [
    ...list("schools").map((id) => ({ kind: "hub", id, stub: hubs.get(hubs.idFromName(id)) })),
    ...list("hooks").map((id) => ({ kind: "courier", id, stub: couriers.get(couriers.idFromName(id)) })),
  ];
}

/** The Worker's environment with its D1 calls and object calls counted per invocation (one per `env`). */
const counted = new WeakMap<Env, Env>();
function workerEnv(env: Env): Env {
  const out = counted.get(env) ?? countedEnv(env, { stubs: true });
  counted.set(env, out);
  return out;
}

/** A request's kind of invocation: its method and path, ids (`xxx_…` segments) as `{id}`. */
const routeOf = (request: Request, url: URL) => `worker ${request.method} ${url.pathname.replace(/\/[a-z]{3}_[^/]*/g, "/{id}")}`;

export default {
  async fetch(request, env, exec) {
    const url = new URL(request.url);
    if (url.pathname === "/__bench/clock" && request.method === "POST") {
      // ?advance=<ms>&schools=…&hooks=…: the objects' clock moves ahead, the named objects' alarms with it.
      const ms = Number(url.searchParams.get("advance"));
      if (!Number.isInteger(ms) || ms < 0) return Response.json({ error: "advance: a whole number of ms ≥ 0" }, { status: 400 });
      offsetMs += ms;
      await Promise.all(named(env, url).map(({ stub }) => stub.benchShift(ms)));
      return Response.json({ now: Date.now() + offsetMs, offsetMs });
    }
    if (url.pathname === "/__bench/objects") {
      // ?schools=…&hooks=…: each named object's figures.
      const objects = named(env, url);
      const figures = await Promise.all(objects.map(({ stub }) => stub.benchFigures()));
      return Response.json({ now: Date.now() + offsetMs, objects: objects.map(({ kind, id }, i) => ({ kind, id, ...figures[i]! })) });
    }
    if (url.pathname === "/__bench/storage") {
      // The SQLite size of the school's hub and of the couriers of `hooks` (comma-separated ids).
      const hub = env.SCHOOL_HUB.get(env.SCHOOL_HUB.idFromName(url.searchParams.get("school") ?? ""));
      const ids = (url.searchParams.get("hooks") ?? "").split(",").filter(Boolean);
      const couriers = await Promise.all(ids.map((id) => env.WEBHOOK_COURIER.get(env.WEBHOOK_COURIER.idFromName(id)).storageBytes()));
      return Response.json({ hub: await hub.storageBytes(), couriers: Object.fromEntries(ids.map((id, i) => [id, couriers[i]])) });
    }
    if (url.pathname === "/__bench/invocations") {
      // GET: the figures so far; DELETE: forget them (a new run starts).
      if (request.method === "DELETE") resetInvocations();
      return Response.json(invocationFigures());
    }
    if (url.pathname === "/__bench/platform") {
      return Response.json({
        all: stats(contexts),
        hub: stats(contexts.filter((c) => c.kind === "hub")),
        courier: stats(contexts.filter((c) => c.kind === "courier")),
      });
    }
    return invocation({}, routeOf(request, url), () => worker.fetch(request, workerEnv(env), exec));
  },
  scheduled: (controller, env, exec) => invocation({}, "worker scheduled", () => worker.scheduled(controller, workerEnv(env), exec)),
} satisfies ExportedHandler<Env>;
