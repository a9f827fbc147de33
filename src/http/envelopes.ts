/**
 * The envelopes of docs/reference.md § "Conventions" as zod schemas: success `{ status, result }`, list
 * `{ status, result, pagination }` and error `{ status, code, message, details?, requestId }`.
 * Each domain wraps its records in them; the OpenAPI document describes them (objects
 * forbid undocumented fields: `z.strictObject`); the code's types are their `z.infer`s.
 */
import { z } from "zod";
import { MAX_PAGE_SIZE } from "../lib/limits";
import { ERROR_CODES, type ErrorCode } from "./error-catalogue";

/** `pagination` of list responses: the page asked for, its size, and whether a next page exists. */
export const paginationSchema = z
  .strictObject({
    page: z.int().min(1).meta({ description: "The page returned, from 1." }),
    limit: z.int().min(1).max(MAX_PAGE_SIZE).meta({ description: "Items per page." }),
    hasMore: z.boolean().meta({ description: "Whether a next page exists." }),
  })
  .meta({ id: "Pagination", example: { page: 1, limit: 100, hasMore: false } });

/** `pagination` of list responses (`{ page, limit, hasMore }`). */
export type Pagination = z.infer<typeof paginationSchema>;

/** The success envelope `{ status: "success", result }`, named `id` in the document. */
export function successEnvelope<T extends z.ZodType>(id: string, result: T, description: string) {
  return z.strictObject({ status: z.literal("success"), result }).meta({ id, description });
}

/**
 * The list envelope `{ status: "success", result: [...], pagination }`, named `id` in the
 * document; `pagination` is `paginationSchema` unless the operation pages otherwise.
 */
export function listEnvelope<T extends z.ZodType, P extends z.ZodType = typeof paginationSchema>(id: string, item: T, description: string, pagination?: P) {
  return z.strictObject({ status: z.literal("success"), result: z.array(item), pagination: pagination ?? paginationSchema }).meta({ id, description });
}

/** One problem of a request: a query `parameter` or a JSON `path` in the body. */
const errorDetailSchema = z
  .union([
    z.strictObject({
      parameter: z.string().meta({ description: "The query parameter at fault." }),
      message: z.string(),
    }),
    z.strictObject({
      path: z.string().meta({ description: "JSON path of the body value at fault (`name`, `professors[0].professorId`, `$` for the whole body)." }),
      message: z.string(),
    }),
  ])
  .meta({ id: "ErrorDetail", description: "One problem: a query `parameter` or a body `path`, and what is wrong with it." });

/** One problem of a request (an item of `details`). */
export type ErrorDetail = z.infer<typeof errorDetailSchema>;

/**
 * The error envelope restricted to `codes`: `{ status: "error", code, message, details?, requestId }`.
 * `meta.id` names it in the document.
 */
export function errorEnvelope<const C extends readonly [ErrorCode, ...ErrorCode[]]>(codes: C, meta: { id?: string; description?: string } = {}) {
  return z
    .strictObject({
      status: z.literal("error"),
      code: z.enum(codes).meta({ description: "What went wrong, as a stable UPPER_SNAKE code (docs/reference.md § Error codes)." }),
      message: z.string().meta({ description: "A human sentence that says what to do; never a stack or SQL." }),
      details: z.array(errorDetailSchema).min(1).optional().meta({ description: "Every problem found (omitted when there is none to list)." }),
      requestId: z.string().meta({ description: "The `x-request-id` of the response; quote it when reporting a problem." }),
    })
    .meta(meta);
}

/** The error envelope with any code of the contract (the type of every error body). */
const errorBodySchema = errorEnvelope(ERROR_CODES);

/** The JSON body of an error response. */
export type ErrorBody = z.infer<typeof errorBodySchema>;
