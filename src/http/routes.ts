/**
 * The route table of the API (API.md). One place lists every endpoint.
 */
import { getCourse, listCourses, patchCourseRoute, postCourse, searchCourses } from "../courses/routes";
import { benchPublish } from "../webhooks/bench";
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
  { method: "DELETE", path: "/v3/webhooks/:id", handler: deleteWebhook },
  { method: "GET", path: "/v3/webhooks/:id/deliveries", handler: listDeliveries },
  { method: "POST", path: "/v3/webhooks/:id/test", handler: testWebhook },
  // Benchmark only: answers 404 unless BENCH_FLOOR=true (scripts/bench-hub.ts).
  { method: "POST", path: "/__bench/publish", handler: benchPublish },
];
