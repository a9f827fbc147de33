/**
 * A registration records the scopes of the API key that created it (docs/reference.md §
 * Scopes), directly or through a portal session that key minted, and its deliveries carry
 * nothing that key could not read: without `courses:read` its course events are thin,
 * whatever its `payload`. The feed does the same for the credential reading it.
 * Registrations stored before scopes hold every scope.
 */
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { migrate } from "../../src/webhooks/hub/storage";
import { callJson } from "../support/helpers";
import { checkEvent } from "../support/openapi-check";
import { keyWithScopes } from "../support/scopes";
import { courseEvent, drain, inHub, newSchool, openPortalSession, ownStorage, register, schemaAsOf, thinBody } from "../support/webhooks/harness";
import { SimulatedPlatform } from "../support/webhooks/platform-sim";

const rx = new SimulatedPlatform();
beforeAll(() => {
  rx.install();
});
afterAll(() => rx.restore());

describe("a registration's scopes", () => {
  it("are its creating key's; without courses:read its course events arrive thin, with it full, through a portal session too", async () => {
    const { schoolId, key } = await newSchool("regscopes");
    const reader = await keyWithScopes(schoolId, "courses:read webhooks:read webhooks:write");
    const blind = await keyWithScopes(schoolId, "webhooks:read webhooks:write portal");
    const withRead = await register(reader, "https://rs-read.example.com/in");
    const without = await register(blind, "https://rs-blind.example.com/in");
    expect([without.payload, without.scopes]).toEqual(["full", ["webhooks:read", "webhooks:write", "portal"]]);
    expect(withRead.scopes).toEqual(["courses:read", "webhooks:read", "webhooks:write"]);
    // Through a portal session: the minting key's scopes, not the session's.
    const blindSession = await openPortalSession(blind);
    const viaBlind = await register(blindSession.token, "https://rs-blind-portal.example.com/in");
    expect(viaBlind.scopes).toEqual(["webhooks:read", "webhooks:write", "portal"]);
    const fullSession = await openPortalSession(key);
    const viaFull = await register(fullSession.token, "https://rs-full-portal.example.com/in");
    expect(viaFull.scopes).toEqual(["courses:read", "courses:write", "students:read", "webhooks:read", "webhooks:write", "events:read", "portal"]);
    expect((await callJson(`/v3/webhooks/${without.id}`, { key })).body.result.scopes).toEqual(["webhooks:read", "webhooks:write", "portal"]);

    const events = [courseEvent(schoolId, "course.created", 1), courseEvent(schoolId, "course.updated", 2)];
    await hubFor(env, schoolId).publish(events);
    await drain(schoolId);
    for (const host of ["rs-blind.example.com", "rs-blind-portal.example.com"]) {
      expect(
        rx.to(host).map((r) => r.body),
        host,
      ).toEqual(events.map(thinBody));
      for (const r of rx.to(host)) checkEvent(JSON.parse(r.body));
    }
    for (const host of ["rs-read.example.com", "rs-full-portal.example.com"]) {
      expect(
        rx.to(host).map((r) => r.body),
        host,
      ).toEqual(events.map((e) => JSON.stringify(e)));
    }
    // A PATCH to `full` by a key that reads courses does not widen what the registration was created with.
    const patched = await callJson(`/v3/webhooks/${without.id}`, { method: "PATCH", key, json: { description: "still blind" } });
    expect(patched.body.result.scopes).toEqual(["webhooks:read", "webhooks:write", "portal"]);
    const third = courseEvent(schoolId, "course.updated", 3);
    await hubFor(env, schoolId).publish([third]);
    await drain(schoolId);
    expect(rx.to("rs-blind.example.com").at(-1)!.body).toBe(thinBody(third));
  });

  it("the feed shows course events thin to a credential without courses:read, full with it", async () => {
    const { schoolId, key } = await newSchool("feedscopes");
    const events = [courseEvent(schoolId, "course.created", 1), courseEvent(schoolId, "course.updated", 2)];
    await hubFor(env, schoolId).publish(events);
    const blind = await keyWithScopes(schoolId, "events:read");
    const reader = await keyWithScopes(schoolId, "events:read courses:read");
    const thin = await callJson("/v3/events", { key: blind });
    expect(thin.body.result).toEqual(events.map((e) => JSON.parse(thinBody(e))));
    const full = await callJson("/v3/events", { key: reader });
    expect(full.body.result).toEqual(events);
    // A portal session narrowed to events:read reads it thin too; one with courses:read, full.
    const narrowed = await openPortalSession(key, { scopes: ["events:read"] });
    expect((await callJson("/v3/events", { key: narrowed.token })).body.result).toEqual(events.map((e) => JSON.parse(thinBody(e))));
    const wide = await openPortalSession(key, { scopes: ["courses:read", "events:read"] });
    expect((await callJson("/v3/events", { key: wide.token })).body.result).toEqual(events);
  });

  it("registrations stored before the migration hold every scope", async () => {
    const { schoolId } = await newSchool("regmigrate");
    await inHub(schoolId, (hub) => {
      const sql = ownStorage(hub).sql;
      // The schema as its tenth migration left it: no `scopes` column.
      schemaAsOf(sql, 10, migrate);
      sql.exec(
        `INSERT INTO webhooks (id, url, events, headers, secret, created_at, updated_at) VALUES ('wh_old', 'https://old.example.com/in', '["*"]', '{}', 'whsec_x', 1, 1)`,
      );
      migrate(sql);
      expect(sql.exec(`SELECT scopes FROM webhooks WHERE id = 'wh_old'`).one().scopes).toBe(
        "courses:read courses:write students:read webhooks:read webhooks:write events:read portal",
      );
    });
  });
});
