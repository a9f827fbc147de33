import type { SchoolHub } from "./webhooks/hub";

/**
 * Bindings and vars of the Worker (wrangler.toml).
 *
 * - `DB`: the D1 database (courses, reference data, API key hashes, outbox).
 * - `SCHOOL_HUB`: the SchoolHub Durable Object namespace, one object per school
 *   (`idFromName(schoolId)`).
 * - `WEBHOOK_*`: deployment settings of API.md § "Deployment settings".
 * - `ASSETS`: the static assets (`dist/assets/`: the Scalar bundle of GET /docs). Requests
 *   for an existing asset are answered before the Worker runs; the binding lets tests read them.
 */
export interface Env {
  DB: D1Database;
  SCHOOL_HUB: DurableObjectNamespace<SchoolHub>;
  WEBHOOK_ALLOW_INSECURE_URLS?: string;
  WEBHOOK_RETRY_SCHEDULE?: string;
  WEBHOOK_TIMEOUT_MS?: string;
  ASSETS?: Fetcher;
}
