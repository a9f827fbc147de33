/**
 * The route table of the API (API.md). One place lists every endpoint; the OpenAPI
 * document (src/openapi/document.ts) describes each of them except /__bench/*, and
 * test/openapi.test.ts checks that it does.
 */
import { getCourse, listCourses, patchCourseRoute, postCourse, searchCourses } from "../courses/routes";
import { benchPublish } from "../webhooks/bench";
import { benchFloor } from "./bench";
import { getDocs, getOpenApi } from "../openapi/routes";
import { listEventTypes, recoverDeliveries, resendDelivery, rotateSecret, updateWebhook } from "../webhooks/lifecycle-routes";
import { createWebhook, deleteWebhook, listDeliveries, listWebhooks, testWebhook } from "../webhooks/routes";
import type { RouteDef } from "./router";

export const routes: RouteDef[] = [
  { method: "GET", path: "/v3/courses", handler: listCourses },
  { method: "POST", path: "/v3/courses:search", handler: searchCourses, literal: true },
  { method: "POST", path: "/v3/courses", handler: postCourse },
  { method: "GET", path: "/v3/courses/:id", handler: getCourse },
  { method: "PATCH", path: "/v3/courses/:id", handler: patchCourseRoute },
  { method: "POST", path: "/v3/webhooks", handler: createWebhook },
  { method: "GET", path: "/v3/webhooks", handler: listWebhooks },
  { method: "PATCH", path: "/v3/webhooks/:id", handler: updateWebhook },
  { method: "DELETE", path: "/v3/webhooks/:id", handler: deleteWebhook },
  { method: "POST", path: "/v3/webhooks/:id/secret/rotate", handler: rotateSecret },
  { method: "POST", path: "/v3/webhooks/:id/deliveries/:eventId/resend", handler: resendDelivery },
  { method: "POST", path: "/v3/webhooks/:id/recover", handler: recoverDeliveries },
  { method: "GET", path: "/v3/event-types", handler: listEventTypes },
  { method: "GET", path: "/v3/webhooks/:id/deliveries", handler: listDeliveries },
  { method: "POST", path: "/v3/webhooks/:id/test", handler: testWebhook },
  // Reference, without authentication: the generated OpenAPI document and Scalar's page.
  { method: "GET", path: "/openapi.json", handler: getOpenApi, literal: true },
  { method: "GET", path: "/docs", handler: getDocs },
  // Benchmark only: answers 404 unless BENCH_FLOOR=true (scripts/bench-hub.ts).
  { method: "POST", path: "/__bench/publish", handler: benchPublish },
  { method: "GET", path: "/__bench/floor", handler: benchFloor },
];
