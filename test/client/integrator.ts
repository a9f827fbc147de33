/**
 * An integrator's program, as one would write it against the published document: types from
 * `openapi-typescript` (`./api.d.ts`, generated beside this file by `npm run test:client`),
 * requests through `openapi-fetch`. It must compile with `tsc --strict`: query parameters take
 * numbers and booleans, and each answer's body is typed by its status and error code.
 * `run(baseUrl, apiKey)` walks the flow once against a running API.
 */
import createClient from "openapi-fetch";
import type { paths } from "./api";

/** Lists, searches, registers a webhook, reads it, deletes it twice, reads the feed; throws on a surprise. */
export async function run(baseUrl: string, apiKey: string): Promise<string[]> {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${apiKey}` } });
  const seen: string[] = [];

  const list = await client.GET("/v3/courses", { params: { query: { limit: 3, page: 1, includeTeachers: true, archived: false } } });
  if (!list.data) throw new Error(`list: ${list.response.status} ${list.error?.code}`);
  const teachers: number = list.data.result.reduce((n, course) => n + (course.teachers ?? []).length, 0);
  const perPage: number = list.data.pagination.limit;
  seen.push(`listed ${list.data.result.length} courses (limit ${perPage}) with ${teachers} teachers`);

  // @ts-expect-error: `limit` is an integer, not a string of digits.
  await client.GET("/v3/courses", { params: { query: { limit: "3" } } });

  const search = await client.POST("/v3/courses:search", {
    body: { archived: false, limit: 2, includeTraining: true, sort: [{ field: "name", order: "asc" }] },
  });
  if (!search.data) throw new Error(`search: ${search.response.status} ${search.error?.code}`);
  seen.push(`searched: ${search.data.result.map((c) => c.name).join(", ")}`);

  const created = await client.POST("/v3/webhooks", {
    body: { url: `${baseUrl}/integrator-hook`, events: ["course.created", "course.updated"], description: "integrator" },
  });
  if (!created.data) throw new Error(`register: ${created.response.status} ${created.error?.code}`);
  const id: string = created.data.result.id;
  seen.push(`registered ${id}`);

  const one = await client.GET("/v3/webhooks/{id}", { params: { path: { id } } });
  if (!one.data) throw new Error(`get: ${one.response.status} ${one.error?.code}`);
  seen.push(`read ${one.data.result.url}`);

  const first = await client.DELETE("/v3/webhooks/{id}", { params: { path: { id } } });
  if (!first.data) throw new Error(`delete: ${first.response.status} ${first.error?.code}`);
  const second = await client.DELETE("/v3/webhooks/{id}", { params: { path: { id } } });
  // The second delete's 404 is typed: its code is among those the document lists for DELETE.
  if (second.response.status !== 404 || second.error?.code !== "WEBHOOK_NOT_FOUND") throw new Error(`second delete: ${second.response.status}`);
  const message: string = second.error.message;
  seen.push(`deleted twice: 404 ${second.error.code} (${message})`);

  const feed = await client.GET("/v3/events", { params: { query: { limit: 5, wait: 0, eventType: "course.created" } } });
  if (!feed.data) throw new Error(`feed: ${feed.response.status} ${feed.error?.code}`);
  const types = feed.data.result.map((event) => event.type);
  seen.push(`feed: ${types.length} events, next ${feed.data.pagination.nextCursor}`);
  return seen;
}
