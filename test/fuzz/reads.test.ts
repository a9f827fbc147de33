/**
 * Fuzz suite, reads (test/fuzz/requests.ts): the course listing, search and reads, the
 * school, the reference routes, the disabled benchmark routes, known paths with other methods and
 * unknown paths.
 */
import { fuzzSuite } from "./suite";

fuzzSuite(
  "fuzz: course reads, reference, misrouted and unknown paths",
  [
    "GET /v3/courses",
    "POST /v3/courses:search",
    "GET /v3/courses/:id",
    "GET /openapi.json",
    "GET /docs",
    "GET /v3/event-types",
    "GET /v3/school",
    "POST /__bench/publish",
    "GET /__bench/floor",
    "GET /__bench/page-floor",
    "misrouted",
    "unknown path",
  ],
  3000,
  20260910,
);
