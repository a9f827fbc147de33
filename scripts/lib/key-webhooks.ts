/**
 * The webhook registrations an API key created or last changed, read and disabled through the
 * Worker's own API (docs/operations.md § API keys): what `npm run keys -- revoke KEY_ID` lists
 * and, with `--disable-webhooks`, disables. Registrations live in the school's SchoolHub, which
 * only the Worker reaches, so the CLI calls the API with a key of the school (scripts/keys.ts
 * mints a temporary one and revokes it at the end of the run). Runs in Node and in workerd.
 */
import { z } from "zod";
import { webhookRecordSchema } from "../../src/webhooks/api/schemas";

/**
 * What the review reads of a registration record (docs/reference.md § Webhook registrations):
 * the fields it filters on and prints. The others are passed over, so that a Worker of another
 * version than this checkout (fields added or not yet there) can still be reviewed.
 */
const reviewedRecordSchema = z.object({
  ...webhookRecordSchema.pick({ id: true, url: true, enabled: true, createdBy: true, updatedBy: true }).shape,
  disabledReason: z.string().nullable(),
});
const listSchema = z.object({ result: z.array(reviewedRecordSchema), pagination: z.object({ hasMore: z.boolean() }) });
const answerSchema = z.object({ result: reviewedRecordSchema });

/** A registration as the review reads it. */
export type WebhookRecord = z.infer<typeof reviewedRecordSchema>;

/** A registration of the review: its record after the run, and whether the run disabled it. */
export interface ReviewedWebhook {
  record: WebhookRecord;
  disabledNow: boolean;
}

/** What a review found: the key's registrations, and the changes it could not make (one sentence each). */
export interface WebhookReview {
  /** Every registration of the school, for the count the CLI prints. */
  total: number;
  webhooks: ReviewedWebhook[];
  problems: string[];
}

/** The API answered unexpectedly or not at all: the message says what happened. */
export class ApiProblem extends Error {}

/** Longest wait for one answer of the API, in ms (a disable waits for the courier's hold). */
const ANSWER_TIMEOUT_MS = 30_000;

/** Longest wait for the probe of `reachable`, in ms. */
const PROBE_TIMEOUT_MS = 10_000;

/**
 * The registrations among `records` that key `keyId` created or last changed (`createdBy` or
 * `updatedBy` is its id), in their order: those a leaked key may have added or re-pointed.
 */
export function touchedBy<T extends Pick<WebhookRecord, "createdBy" | "updatedBy">>(records: readonly T[], keyId: string): T[] {
  return records.filter((r) => r.createdBy === keyId || r.updatedBy === keyId);
}

/** `base` without trailing slashes, so that a path can be appended (a base with a path keeps it). */
const trimmed = (base: string) => base.replace(/\/+$/, "");

/**
 * Whether anything answers HTTP at `base` (a `GET /v3/webhooks` without a credential: any
 * status counts). False when the connection fails or `PROBE_TIMEOUT_MS` passes.
 */
export async function reachable(base: string, fetchFn: typeof fetch = fetch): Promise<boolean> {
  try {
    const res = await fetchFn(`${trimmed(base)}/v3/webhooks`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    await res.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

/** One call of the API with `key`: the answer's status and JSON body (`null` when not JSON). @throws ApiProblem when no answer comes. */
async function call(fetchFn: typeof fetch, base: string, key: string, method: string, path: string, json?: unknown) {
  let res: Response;
  try {
    res = await fetchFn(`${trimmed(base)}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(json === undefined ? {} : { "content-type": "application/json" }) },
      body: json === undefined ? undefined : JSON.stringify(json),
      signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS),
    });
  } catch (err) {
    throw new ApiProblem(`${method} ${base}${path}: no answer (${(err as Error).message})`);
  }
  const body: unknown = await res.json().catch(() => null);
  return { status: res.status, body };
}

/** A sentence for an error answer: status, and the envelope's code and message when it has them. */
function answerProblem(method: string, path: string, status: number, body: unknown): string {
  const { code, message } = (body ?? {}) as { code?: unknown; message?: unknown };
  const said = typeof code === "string" ? ` ${code}: ${String(message)}` : "";
  const hint = status === 401 ? " (the API does not know the school's key: is it the Worker of this D1 database?)" : "";
  return `${method} ${path} answered ${status}${said}${hint}`;
}

/**
 * Lists the school's registrations with `key` (`GET /v3/webhooks`: one page holds them all,
 * docs/reference.md § GET /v3/webhooks) and keeps those key `keyId` created or last changed;
 * with `disable`, sends each enabled one `PATCH /v3/webhooks/{id}` `{ "enabled": false }`
 * (disabled `manual`; its `updatedBy` becomes `key`'s id). A PATCH that fails is a problem of
 * the review; the others still go.
 *
 * @throws ApiProblem when the listing cannot be read (no answer, an error status, a body that
 *   is not the contract's list, or more than one page).
 */
export async function reviewWebhooks(opts: { base: string; key: string; keyId: string; disable: boolean; fetch?: typeof fetch }): Promise<WebhookReview> {
  const fetchFn = opts.fetch ?? fetch;
  const listed = await call(fetchFn, opts.base, opts.key, "GET", "/v3/webhooks");
  if (listed.status !== 200) throw new ApiProblem(answerProblem("GET", "/v3/webhooks", listed.status, listed.body));
  const page = listSchema.safeParse(listed.body);
  if (!page.success) throw new ApiProblem(`GET /v3/webhooks answered a body that is not a list of registrations: ${page.error.message}`);
  if (page.data.pagination.hasMore) throw new ApiProblem("GET /v3/webhooks answered more than one page (the contract lists every registration on one)");
  const webhooks: ReviewedWebhook[] = [];
  const problems: string[] = [];
  for (const record of touchedBy(page.data.result, opts.keyId)) {
    if (!opts.disable || !record.enabled) {
      webhooks.push({ record, disabledNow: false });
      continue;
    }
    const path = `/v3/webhooks/${encodeURIComponent(record.id)}`;
    let problem: string;
    try {
      const changed = await call(fetchFn, opts.base, opts.key, "PATCH", path, { enabled: false });
      const answer = answerSchema.safeParse(changed.body);
      if (changed.status === 200 && answer.success) {
        webhooks.push({ record: answer.data.result, disabledNow: !answer.data.result.enabled });
        continue;
      }
      problem = answerProblem("PATCH", path, changed.status, changed.body);
    } catch (err) {
      if (!(err instanceof ApiProblem)) throw err;
      problem = err.message;
    }
    webhooks.push({ record, disabledNow: false });
    problems.push(problem);
  }
  return { total: page.data.result.length, webhooks, problems };
}
