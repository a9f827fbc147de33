/**
 * An integrator's program, as one would write it against the published document: types from
 * `openapi-typescript` (`./api.d.ts`, generated beside this file by `npm run test:client`),
 * requests through `openapi-fetch`. It must compile with `tsc --strict`: query parameters take
 * numbers and booleans, each answer's body is typed by its status and error code, and every
 * field with a `default` (request bodies and queries) is left out, as the service fills it in.
 * `run(baseUrl, apiKey)` walks the flow once against a running API.
 */
import createClient from "openapi-fetch";
import type { components, paths, webhooks } from "./api";

type CourseCreateBody = paths["/v3/courses"]["post"]["requestBody"]["content"]["application/json"];
type CoursePatchBody = NonNullable<paths["/v3/courses/{id}"]["patch"]["requestBody"]>["content"]["application/json"];
type SearchBody = NonNullable<paths["/v3/courses:search"]["post"]["requestBody"]>["content"]["application/json"];

/** Bodies without their defaulted fields (a professor's `coTeacher` and `signed`, a sort key's `order`): compiled, not sent. */
export const defaultedBodies: [CourseCreateBody, CoursePatchBody, SearchBody] = [
  { name: "Algèbre", startDateTime: "2026-12-01T08:00:00+01:00", endDateTime: "2026-12-01T10:00:00+01:00", professors: [{ professorId: "prf_4" }] },
  { professors: [{ professorId: "prf_4" }] },
  { sort: [{ field: "name" }] },
];

/** What a receiver's handler takes: any body a webhook endpoint may be POSTed. */
export type WebhookDelivery = components["schemas"]["WebhookDelivery"];
type DeliveryBody<T extends keyof webhooks> = NonNullable<webhooks[T]["post"]["requestBody"]>["content"]["application/json"];
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** The named union is exactly the bodies of the document's `webhooks`: one of each, none besides. */
export const deliveryUnionIsEveryBody: Same<WebhookDelivery, DeliveryBody<keyof webhooks>> = true;

/** A receiver's handler: `type` narrows the body (compiled, not run). */
export function describeDelivery(body: WebhookDelivery): string {
  switch (body.type) {
    case "course.professor_signed":
      return `${body.data.professorId} signed ${body.data.course.id}`;
    case "webhook.events_missed":
      return `${body.data.webhookId} missed events from ${body.data.from}`;
    default:
      return body.type;
  }
}

/** Lists, searches, registers a webhook, reads it, deletes it twice, reads the feed; throws on a surprise. */
export async function run(baseUrl: string, apiKey: string): Promise<string[]> {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${apiKey}` } });
  const seen: string[] = [];

  // `page`, `limit` and the `include*` flags have defaults: left out.
  const list = await client.GET("/v3/courses", { params: { query: { archived: false } } });
  if (!list.data) throw new Error(`list: ${list.response.status} ${list.error?.code}`);
  const perPage: number = list.data.pagination.limit;
  // The same listing walked by cursor, 5 a page: `nextCursor` is `null` on the last page.
  const pageAfter = (cursor: string | null) =>
    client.GET("/v3/courses", { params: { query: { archived: false, limit: 5, ...(cursor === null ? {} : { cursor }) } } });
  let walked = 0;
  let cursor: string | null = null;
  do {
    const page = await pageAfter(cursor);
    if (!page.data) throw new Error(`list by cursor: ${page.response.status} ${page.error?.code}`);
    walked += page.data.result.length;
    cursor = page.data.pagination.nextCursor;
  } while (cursor !== null);
  if (walked !== list.data.result.length) throw new Error(`the walk by cursor read ${walked} courses, the listing ${list.data.result.length}`);
  seen.push(`listed ${list.data.result.length} courses (limit ${perPage}), walked by cursor 5 a page`);

  // An id-list filter takes an array (sent as the repeated parameter) or a comma-separated string: the same courses.
  const groups = [...new Set(list.data.result.flatMap((course) => course.groupIds))].slice(0, 2);
  const byArray = await client.GET("/v3/courses", { params: { query: { groupId: groups } } });
  const byText = await client.GET("/v3/courses", { params: { query: { groupId: groups.join(",") } } });
  const idsOf = (r: typeof byArray) => r.data?.result.map((course) => course.id).join(",");
  if (groups.length === 0 || !idsOf(byArray) || idsOf(byArray) !== idsOf(byText))
    throw new Error(`groupId as an array: ${byArray.response.status} [${idsOf(byArray)}], as text: [${idsOf(byText)}]`);
  seen.push(`groupId [${groups.join(", ")}] as an array and as text: the same ${byArray.data!.result.length} courses`);

  // @ts-expect-error: `limit` is an integer, not a string of digits.
  await client.GET("/v3/courses", { params: { query: { limit: "3" } } });

  // Only `courseId` and `limit`: `page` and the `include*` flags have defaults.
  const ids = list.data.result.map((course) => course.id);
  const search = await client.POST("/v3/courses:search", { body: { courseId: ids, limit: 10 } });
  if (!search.data) throw new Error(`search: ${search.response.status} ${search.error?.code}`);
  seen.push(`searched ${ids.length} ids: ${search.data.result.map((c) => c.name).join(", ")}`);

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
