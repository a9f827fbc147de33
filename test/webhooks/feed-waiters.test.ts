/**
 * The events feed's long polls are capped per school (docs/reference.md § Events feed): at
 * most 100 requests of one school wait at once; beyond, `wait` counts as 0 and the answer
 * comes at once; a poll woken by new events answers at most 40,000 bytes of them (one page's
 * 4,000,000 shared by the 100), `hasMore` telling it to read on. The hub's waiting readers
 * are read inside the object.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { hubFor } from "../../src/events/hub-client";
import { callJson } from "../support/helpers";
import { courseEvent, eventually, newSchool } from "../support/webhooks/harness";

type Page = { status: number; body: { result: { id: string }[]; pagination: { nextCursor: string; hasMore: boolean } } };

/** How many feed readers wait in the school's hub. */
const waiting = (schoolId: string) =>
  runInDurableObject(env.SCHOOL_HUB.get(env.SCHOOL_HUB.idFromName(schoolId)), (hub) => (hub as any).readers.waiters.size as number);

describe("at most 100 waiting long polls per school", () => {
  it("the 101st answers at once with an empty page, while the 100 still wait; an event then reaches the 100", async () => {
    const { schoolId, key } = await newSchool("waiters");
    const { body } = (await callJson("/v3/events", { key })) as Page;
    const cursor = body.pagination.nextCursor;
    let settled = 0;
    const polls = Array.from({ length: 100 }, () =>
      (callJson(`/v3/events?after=${cursor}&wait=25`, { key }) as Promise<Page>).then((page) => {
        settled += 1;
        return page;
      }),
    );
    await eventually(async () => (await waiting(schoolId)) === 100, "100 waiting polls", 20_000);

    const extra = (await callJson(`/v3/events?after=${cursor}&wait=25`, { key })) as Page;
    expect([extra.status, extra.body.result]).toEqual([200, []]);
    expect(settled).toBe(0);
    expect(await waiting(schoolId)).toBe(100);

    const event = courseEvent(schoolId, "course.created", 1);
    await hubFor(env, schoolId).publish([event]);
    for (const page of await Promise.all(polls)) expect(page.body.result.map((e) => e.id)).toEqual([event.id]);
    // Another school's polls are not capped by this one's.
    const other = await newSchool("waiters_other");
    const otherPoll = callJson(`/v3/events?wait=25`, { key: other.key }) as Promise<Page>;
    await eventually(async () => (await waiting(other.schoolId)) === 1, "the other school's poll waiting");
    await hubFor(env, other.schoolId).publish([courseEvent(other.schoolId, "course.created", 2)]);
    expect((await otherPoll).body.result).toHaveLength(1);
  }, 60_000);
});

describe("a woken long poll's page", () => {
  it("holds at most 40,000 bytes of the events that woke it (at least one), with hasMore; reading on returns the rest", async () => {
    const { schoolId, key } = await newSchool("woken");
    const { body } = (await callJson("/v3/events", { key })) as Page;
    const poll = callJson(`/v3/events?after=${body.pagination.nextCursor}&wait=25`, { key }) as Promise<Page>;
    await eventually(async () => (await waiting(schoolId)) === 1, "the poll waiting");
    // Five events of an imported course with 240 group ids (about 15,000 bytes each): two fit in 40,000 bytes, three do not.
    const events = Array.from({ length: 5 }, (_, i) => {
      const event = courseEvent(schoolId, "course.created", i);
      event.data.course!.groupIds = Array.from({ length: 240 }, (_, g) => `grp_${i}_${String(g).padStart(6, "0")}_${"x".repeat(40)}`);
      return event;
    });
    await hubFor(env, schoolId).publish(events);
    const woken = await poll;
    expect(woken.body.result.map((e) => e.id)).toEqual(events.slice(0, 2).map((e) => e.id));
    expect(woken.body.pagination.hasMore).toBe(true);
    const rest = (await callJson(`/v3/events?after=${woken.body.pagination.nextCursor}&wait=25`, { key })) as Page;
    expect(rest.body.result.map((e) => e.id)).toEqual(events.slice(2).map((e) => e.id));
    expect(rest.body.pagination.hasMore).toBe(false);
  });
});
