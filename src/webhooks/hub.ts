import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";

/** SchoolHub: the school's event hub (issue 3). Placeholder until the hub lands. */
export class SchoolHub extends DurableObject<Env> {}
