/**
 * The contract as the fuzz oracle reads it: routes, parameter names and limits, written
 * from docs/reference.md (and, where the contract is silent, from the choices docs/choices.md
 * and the OpenAPI document state), not imported from the implementation — so that a change in the
 * code cannot silently change what the fuzz expects.
 */

/** An error code the contract may answer (docs/reference.md § "Error codes"). */
export type Code =
  | "INVALID_PARAMETER"
  | "UNKNOWN_PARAMETER"
  | "TOO_MANY_IDS"
  | "INVALID_JSON"
  | "VALIDATION_ERROR"
  | "INVALID_DATE_RANGE"
  | "STUDENTS_NOT_FOUND"
  | "GROUPS_NOT_FOUND"
  | "PROFESSORS_NOT_FOUND"
  | "TRAINING_NOT_FOUND"
  | "SURVEY_TEMPLATES_NOT_FOUND"
  | "INVALID_WEBHOOK_URL"
  | "UNAUTHORIZED"
  | "FORBIDDEN"
  | "NOT_FOUND"
  | "COURSE_NOT_FOUND"
  | "WEBHOOK_NOT_FOUND"
  | "METHOD_NOT_ALLOWED"
  | "WEBHOOK_LIMIT_REACHED"
  | "WEBHOOK_DISABLED"
  | "PORTAL_SESSION_LIMIT_REACHED"
  | "EVENT_NOT_FOUND"
  | "PAYLOAD_TOO_LARGE"
  | "UNSUPPORTED_MEDIA_TYPE"
  | "RATE_LIMITED"
  | "CURSOR_EXPIRED";

/** One route of the service (method + path template, `:id` for an id segment). */
export interface RouteSpec {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  /** Needs `Authorization: Bearer <key>` (401 UNAUTHORIZED first otherwise). */
  auth: boolean;
}

/**
 * Every route of the router (the operations of src/api.ts, plus the bench entry's).
 * test/fuzz/routes.test.ts checks that this list and the router's table are the same, so a
 * new route cannot go unfuzzed.
 */
export const ROUTES: RouteSpec[] = [
  { method: "GET", path: "/v3/courses", auth: true },
  { method: "GET", path: "/v3/courses/changes", auth: true },
  { method: "POST", path: "/v3/courses:search", auth: true },
  { method: "POST", path: "/v3/courses", auth: true },
  { method: "GET", path: "/v3/courses/:id", auth: true },
  { method: "PATCH", path: "/v3/courses/:id", auth: true },
  { method: "POST", path: "/v3/webhooks", auth: true },
  { method: "GET", path: "/v3/webhooks", auth: true },
  { method: "GET", path: "/v3/webhooks/:id", auth: true },
  { method: "DELETE", path: "/v3/webhooks/:id", auth: true },
  { method: "GET", path: "/v3/webhooks/:id/deliveries", auth: true },
  { method: "GET", path: "/v3/webhooks/:id/stats", auth: true },
  { method: "POST", path: "/v3/webhooks/:id/test", auth: true },
  { method: "PATCH", path: "/v3/webhooks/:id", auth: true },
  { method: "POST", path: "/v3/webhooks/:id/secret/rotate", auth: true },
  { method: "POST", path: "/v3/webhooks/:id/deliveries/:eventId/resend", auth: true },
  { method: "POST", path: "/v3/webhooks/:id/recover", auth: true },
  { method: "GET", path: "/v3/events", auth: true },
  { method: "GET", path: "/v3/event-types", auth: false },
  { method: "POST", path: "/v3/portal-sessions", auth: true },
  { method: "DELETE", path: "/v3/portal-sessions", auth: true },
  { method: "POST", path: "/v3/portal-sessions/redeem", auth: true },
  { method: "GET", path: "/v3/school", auth: true },
  { method: "GET", path: "/", auth: false },
  { method: "GET", path: "/openapi.json", auth: false },
  { method: "GET", path: "/docs", auth: false },
  { method: "GET", path: "/healthz", auth: false },
  // Benchmark routes: 404 NOT_FOUND but from the benchmark entry (src/bench/entry.ts).
  { method: "POST", path: "/__bench/publish", auth: true },
  { method: "GET", path: "/__bench/floor", auth: false },
  { method: "GET", path: "/__bench/page-floor", auth: false },
];

/** The methods a path template answers (for 405 METHOD_NOT_ALLOWED). */
export function methodsOf(template: string): string[] {
  return ROUTES.filter((r) => r.path === template).map((r) => r.method);
}

/** Limits and names of docs/reference.md (and of docs/choices.md). */
export const C = {
  /** Ids: 1–64 characters `[A-Za-z0-9_-]`. */
  idRe: /^[A-Za-z0-9_-]{1,64}$/,
  /** GET id lists: at most 100 ids (400 TOO_MANY_IDS beyond). */
  getMaxIds: 100,
  /** Search id lists: up to 10,000 ids. */
  searchMaxIds: 10_000,
  /** `page`: from 1; at most 1,000,000 (docs/choices.md § Courses). */
  maxPage: 1_000_000,
  /** `limit`: 1 to 100. */
  maxLimit: 100,
  /** `name`, `classroom`: 1–200 characters. */
  maxText: 200,
  /** Bodies: at most 1 MiB (413 beyond). */
  maxBodyBytes: 1024 * 1024,
  /** `groupIds`, `studentIds`, `surveyTemplateIds` of a course write: at most 1,000 items (OpenAPI `maxItems`). */
  maxWriteList: 1_000,
  /** `professors` of a course write: at most 100 (OpenAPI `maxItems`). */
  maxProfessors: 100,
  /** Webhook `description`: at most 500 characters (docs/choices.md § Webhooks). */
  maxDescription: 500,
  /** Longest secret rotation grace, in seconds (7 days). */
  maxGraceSeconds: 604_800,
  /** Webhook URL: at most 2,048 characters (OpenAPI). */
  maxUrl: 2048,
  /** Registrations per school. */
  maxWebhooks: 50,
  /** A portal session's `expiresInSeconds`: 60 to 604,800 (7 days). */
  minSessionSeconds: 60,
  maxSessionSeconds: 604_800,
  /** Sort keys of a search: at most one per sortable field (OpenAPI `maxItems`). */
  sortFields: ["startDateTime", "endDateTime", "name", "classroom", "createdAt", "updatedAt"] as const,
  eventTypes: [
    "course.created",
    "course.updated",
    "course.archived",
    "course.unarchived",
    "course.absences_sent",
    "course.professor_signed",
    "webhook.disabled",
    "webhook.failing",
    "webhook.recovered",
  ] as const,
  booleans: ["true", "false", "1", "0"] as const,
  instantParams: ["courseStartDateTime", "courseEndDateTime", "createdAt", "updatedAt"] as const,
  flagParams: ["absencesSent", "absencesNotSent", "archived", "professorSignatureMissing"] as const,
  includeParams: ["includeStudents", "includeTeachers", "includeSurveyTemplates", "includeTraining"] as const,
  idListParams: ["groupId", "studentId", "professorId", "trainingId"] as const,
};

/** Every parameter of GET /v3/courses. */
export const LIST_PARAMS: readonly string[] = [
  ...C.instantParams,
  ...C.flagParams,
  ...C.idListParams,
  "classroom",
  "creatorId",
  "name",
  "page",
  "limit",
  ...C.includeParams,
];

/** Every field of the search body. */
export const SEARCH_FIELDS: readonly string[] = [...LIST_PARAMS, "courseId", "sort"];

/** Fields of POST /v3/courses; PATCH adds `archived` and `absencesSent`. */
export const WRITE_FIELDS: readonly string[] = [
  "name",
  "startDateTime",
  "endDateTime",
  "classroom",
  "creatorId",
  "trainingId",
  "groupIds",
  "studentIds",
  "professors",
  "surveyTemplateIds",
];

/** Fields of POST /v3/webhooks. */
export const WEBHOOK_FIELDS: readonly string[] = ["url", "events", "description", "filter", "headers", "maxPerSecond", "ordering"];

/** The HTTP status of each code (docs/reference.md § "Error codes"). */
export const STATUS_OF: Record<Code | "INTERNAL_ERROR", number> = {
  INVALID_PARAMETER: 400,
  UNKNOWN_PARAMETER: 400,
  TOO_MANY_IDS: 400,
  INVALID_JSON: 400,
  VALIDATION_ERROR: 400,
  INVALID_DATE_RANGE: 400,
  STUDENTS_NOT_FOUND: 400,
  GROUPS_NOT_FOUND: 400,
  PROFESSORS_NOT_FOUND: 400,
  TRAINING_NOT_FOUND: 400,
  SURVEY_TEMPLATES_NOT_FOUND: 400,
  INVALID_WEBHOOK_URL: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  COURSE_NOT_FOUND: 404,
  WEBHOOK_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  WEBHOOK_LIMIT_REACHED: 409,
  WEBHOOK_DISABLED: 409,
  PORTAL_SESSION_LIMIT_REACHED: 409,
  EVENT_NOT_FOUND: 404,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  CURSOR_EXPIRED: 410,
  INTERNAL_ERROR: 500,
};
