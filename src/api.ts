/**
 * The API: every operation the Worker serves, in the router's order, and the OpenAPI
 * document built from the same declarations. Both the router (src/index.ts) and the
 * document read this list; a domain adds an operation in its own `operations.ts`.
 *
 * Loads in Node as well as in workerd (no import of the hub's module), so that
 * `npm run lint:openapi` builds the same document as GET /openapi.json.
 */
import { courseOperations } from "./courses/operations";
import { healthOperations } from "./db/health";
import { publishEvents } from "./events/outbox";
import type { Operation } from "./http/operation";
import { API_VERSION, buildOpenApiDocument, type OpenApiDocument } from "./openapi/document";
import { referenceOperations } from "./openapi/operations";
import { DOCS_HEADERS } from "./portal/headers";
import { portalSessionOperations } from "./portal/operations";
import { deliveryOperations } from "./webhooks/api/deliveries";
import { catalogOperations, eventWebhooks } from "./webhooks/api/event-catalog";
import { feedOperations } from "./webhooks/api/feed";
import { registrationOperations } from "./webhooks/api/registrations";

/** Every operation of the API (docs/reference.md), then the reference routes and the health check. */
export const operations: Operation<Env>[] = [
  ...courseOperations(publishEvents),
  ...registrationOperations,
  ...deliveryOperations,
  ...feedOperations,
  ...catalogOperations,
  ...portalSessionOperations,
  ...referenceOperations<Env>(openApiDocument, DOCS_HEADERS),
  ...healthOperations(API_VERSION),
];

let cached: OpenApiDocument | undefined;

/**
 * The document, computed once per isolate (the object is shared: do not mutate it). Its
 * `servers` names the local development server; GET /openapi.json replaces it with the
 * origin the document is fetched from.
 */
export function openApiDocument(): OpenApiDocument {
  cached ??= buildOpenApiDocument(operations, eventWebhooks);
  return cached;
}
