/**
 * The Worker that `npm run bench:hub -- --simulated` serves: the production Worker (same
 * routes, same SchoolHub and WebhookCourier classes) with the webhook objects on a platform
 * that enforces, around the real `fetch` and the real Durable Object calls, Cloudflare's
 * limit of 6 requests waiting for response headers per I/O context — one context per object
 * instance, further requests queued in order (test/webhooks/io-context.ts, which cites the
 * documentation it follows). `wrangler dev` alone does not enforce it.
 *
 * `GET /__bench/platform` answers what the contexts went through: how many, the most
 * requests ever waiting in one, how many requests had to queue, by kind of object.
 * Never deployed: wrangler.toml's `main` stays src/index.ts.
 */
import worker from "../src/bench";
import { CLOUDFLARE, usePlatform } from "../src/webhooks/platform/platform";
import { IoContext } from "../test/webhooks/io-context";

export { SchoolHub, WebhookCourier } from "../src/bench";

const contexts: { kind: string; io: IoContext }[] = [];

usePlatform((objectId, kind) => {
  const io = new IoContext(`${kind}:${objectId.slice(0, 12)}#${contexts.length + 1}`);
  contexts.push({ kind, io });
  return {
    now: CLOUDFLARE.now,
    setTimer: CLOUDFLARE.setTimer,
    fetch: (url, init) => io.request(() => fetch(url, init), init.signal),
    call: (send) => io.request(() => Promise.resolve(send())),
  };
});

/** What the I/O contexts of one kind (or all) went through. */
function stats(of: { kind: string; io: IoContext }[]) {
  return {
    contexts: of.length,
    maxWaiting: Math.max(0, ...of.map((c) => c.io.maxWaiting)),
    queuedEver: of.reduce((n, c) => n + c.io.queuedEver, 0),
    requests: of.reduce((n, c) => n + c.io.started, 0),
  };
}

export default {
  fetch(request, env, exec) {
    if (new URL(request.url).pathname === "/__bench/platform") {
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
