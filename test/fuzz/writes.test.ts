/**
 * Fuzz suite, writes (test/fuzz/requests.ts): course writes, every webhook route and the
 * portal sessions (the redeem included). Valid writes go to a school of their own; the read school must end
 * unchanged.
 */
import { fuzzSuite } from "./suite";

fuzzSuite(
  "fuzz: course writes and webhooks",
  [
    "POST /v3/courses",
    "PATCH /v3/courses/:id",
    "POST /v3/webhooks",
    "GET /v3/webhooks",
    "GET /v3/webhooks/:id",
    "DELETE /v3/webhooks/:id",
    "GET /v3/webhooks/:id/deliveries",
    "POST /v3/webhooks/:id/test",
    "PATCH /v3/webhooks/:id",
    "POST /v3/webhooks/:id/secret/rotate",
    "POST /v3/webhooks/:id/deliveries/:eventId/resend",
    "POST /v3/webhooks/:id/recover",
    "GET /v3/events",
    "POST /v3/portal-sessions",
    "DELETE /v3/portal-sessions",
    "POST /v3/portal-sessions/redeem",
  ],
  2000,
  20260911,
);
