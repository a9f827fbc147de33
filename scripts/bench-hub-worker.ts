/**
 * The Worker that `npm run bench:hub -- --simulated` serves: the production Worker with the
 * webhook objects on a platform that enforces Cloudflare's 6 requests waiting for response
 * headers per I/O context (test/support/webhooks/io-context.ts), one context per object
 * instance, further requests queued in order. `wrangler dev` alone does not enforce it.
 *
 * `GET /__bench/platform` answers what the contexts went through (calls between objects, the
 * most requests ever waiting, how many queued); `GET /__bench/storage?school=&hooks=` the
 * SQLite size of the hub and of the named couriers. Never deployed: wrangler.toml's `main`
 * stays src/index.ts.
 */
import worker from "../src/bench/entry";
import { CLOUDFLARE, usePlatform } from "../src/webhooks/platform/platform";
import { IoContext } from "../test/support/webhooks/io-context";

export { SchoolHub, WebhookCourier } from "../src/bench/entry";

const contexts: { kind: string; io: IoContext; calls: number }[] = [];

usePlatform((objectId, kind) => {
  const context = { kind, io: new IoContext(`${kind}:${objectId.slice(0, 12)}#${contexts.length + 1}`), calls: 0 };
  contexts.push(context);
  const { io } = context;
  return {
    now: CLOUDFLARE.now,
    setTimer: CLOUDFLARE.setTimer,
    fetch: (url, init) => io.request(() => fetch(url, init), init.signal),
    // Every call from one object to another goes through here: counted at the stubs.
    call: (send) => {
      context.calls += 1;
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

export default {
  async fetch(request, env, exec) {
    const url = new URL(request.url);
    if (url.pathname === "/__bench/storage") {
      // The SQLite size of the school's hub and of the couriers of `hooks` (comma-separated ids).
      const hub = env.SCHOOL_HUB.get(env.SCHOOL_HUB.idFromName(url.searchParams.get("school") ?? ""));
      const ids = (url.searchParams.get("hooks") ?? "").split(",").filter(Boolean);
      const couriers = await Promise.all(ids.map((id) => env.WEBHOOK_COURIER.get(env.WEBHOOK_COURIER.idFromName(id)).storageBytes()));
      return Response.json({ hub: await hub.storageBytes(), couriers: Object.fromEntries(ids.map((id, i) => [id, couriers[i]])) });
    }
    if (url.pathname === "/__bench/platform") {
      return Response.json({
        all: stats(contexts),
        hub: stats(contexts.filter((c) => c.kind === "hub")),
        courier: stats(contexts.filter((c) => c.kind === "courier")),
      });
    }
    return worker.fetch(request, env, exec);
  },
  scheduled: worker.scheduled,
} satisfies ExportedHandler<Env>;
