/**
 * The route table of the API (API.md). One place lists every endpoint.
 */
import { getCourse, listCourses, searchCourses } from "../courses/routes";
import type { RouteDef } from "./router";

export const routes: RouteDef[] = [
  { method: "GET", path: "/v3/courses", handler: listCourses },
  { method: "POST", path: "/v3/courses:search", handler: searchCourses, literal: true },
  { method: "GET", path: "/v3/courses/:id", handler: getCourse },
];
