/**
 * The config a registration gives its courier (`CourierConfig`), from its `webhooks` row. What
 * its deliveries carry follows its creating key's scopes (docs/reference.md § Scopes): a
 * registration whose key could not read courses (`courses:read`) gets course events thin,
 * whatever its `payload`, so that no delivery carries what that key could not read.
 */
import { readsCourses, storedScopes } from "../../lib/scopes";
import type { PayloadForm } from "../delivery/payload";
import type { SignatureScheme } from "../delivery/signing";
import type { CourierConfig, Ordering } from "../rpc";

/** The columns of a `webhooks` row (hub/registrations.ts `WebhookRow`) a courier's config is made of. Instants in ms. */
export interface ConfigRow {
  id: string;
  version: number;
  url: string;
  signature_scheme: SignatureScheme;
  secret: string;
  previous_secret: string | null;
  previous_expires_at: number | null;
  payload: PayloadForm;
  /** The creating key's scopes (`formatScopes`' form). */
  scopes: string;
  headers: string;
  max_per_second: number | null;
  ordering: Ordering;
  enabled: number;
  disables: number;
}

/**
 * What `row`'s deliveries carry: its `payload`, or `thin` when its creating key lacks
 * `courses:read` (course records are that scope's; events carry no student data).
 */
const deliveredPayload = (row: Pick<ConfigRow, "payload" | "scopes">): PayloadForm => (readsCourses(storedScopes(row.scopes)) ? row.payload : "thin");

/** The config registration `row` gives its courier (see `CourierConfig`). */
export function courierConfig(row: ConfigRow, schoolId: string, hubId: string): CourierConfig {
  return {
    webhookId: row.id,
    schoolId,
    hubId,
    version: row.version,
    url: row.url,
    signatureScheme: row.signature_scheme,
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousExpiresAt: row.previous_expires_at,
    payload: deliveredPayload(row),
    headers: JSON.parse(row.headers) as Record<string, string>,
    maxPerSecond: row.max_per_second,
    ordering: row.ordering,
    enabled: row.enabled === 1,
    disables: row.disables,
  };
}
