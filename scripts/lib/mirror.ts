/**
 * The mirror recipe of docs/api-guide.md § "Keeping a mirror", as a client program: a full
 * sync by keyset paging, a catch-up through the change query from the snapshot's
 * `changesCursor`, then the events feed (or deliveries), resuming through the change query
 * after any gap (`410 CURSOR_EXPIRED`, `webhook.events_missed`). Every record is applied
 * only when its version is higher than the mirror's, so replays and overlaps are harmless.
 * Runtime-agnostic: `npm test` drives it through the Worker's `fetch`
 * (test/courses/mirror.test.ts), `npm run bench -- --mirror` over HTTP.
 */
import { decodeChangeCursor } from "../../src/lib/change-cursor";

/** One answer of the API: its HTTP status, parsed JSON body, and the body's bytes. */
export interface MirrorAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON, read field by field below.
  body: any;
  bytes: number;
}

/** A GET of `path` (from `/v3`, with its query) as the school's credential. */
export type MirrorGet = (path: string) => Promise<MirrorAnswer>;

/** A course as the mirror keeps it: the record the API answered (no includes) and its version. */
export interface MirroredCourse {
  version: number;
  record: Record<string, unknown>;
}

/** Requests and response bytes spent by one phase of the recipe. */
export interface MirrorCost {
  requests: number;
  bytes: number;
}

/** How long the feed retains events (docs/reference.md § "Events feed: GET /v3/events": 7 days), ms. */
const FEED_RETENTION_MS = 7 * 86_400_000;

/** How far before a catch-up the feed restarts (ms): covers a read replica's lag. */
const FEED_OVERLAP_MS = 60_000;

/** Course event types whose `data.course` is the course after its change. */
const COURSE_EVENT = /^course\./;

/** Thrown when the API answers something the recipe cannot go on from. */
class MirrorError extends Error {}

/**
 * A mirror of one school's courses. `fullSync` once, then `follow` the feed as often as
 * wanted; `catchUp` after any gap. `cost` counts what each phase spent.
 */
export class CourseMirror {
  readonly courses = new Map<string, MirroredCourse>();
  /** The change query's position: every change after it is still to be read. */
  changesCursor: string | undefined;
  /** The feed's position (`nextCursor`), or undefined before the first read. */
  feedCursor: string | undefined;
  /** The instant (ISO) the feed starts from when it has no cursor: just before the last catch-up. */
  feedSince: string | undefined;
  readonly cost: Record<"fullSync" | "catchUp" | "feed", MirrorCost> = {
    fullSync: { requests: 0, bytes: 0 },
    catchUp: { requests: 0, bytes: 0 },
    feed: { requests: 0, bytes: 0 },
  };
  /** Gaps the feed reported (`410 CURSOR_EXPIRED`) or notices of missed events received. */
  gaps = 0;

  constructor(
    private readonly get: MirrorGet,
    private readonly now: () => number = Date.now,
    private readonly pageSize = 100,
  ) {}

  /** Applies a course record if it is newer than the mirror's copy. @returns whether it was applied. */
  apply(record: Record<string, unknown>): boolean {
    const id = record.id as string;
    const version = record.version as number;
    const have = this.courses.get(id);
    if (have && have.version >= version) return false;
    this.courses.set(id, { version, record });
    return true;
  }

  private async read(phase: keyof CourseMirror["cost"], path: string): Promise<MirrorAnswer> {
    const answer = await this.get(path);
    this.cost[phase].requests += 1;
    this.cost[phase].bytes += answer.bytes;
    return answer;
  }

  /**
   * The full sync: every page of `GET /v3/courses` by keyset cursor, then a catch-up from the
   * `changesCursor` the first page answered (the snapshot's position in the change sequence),
   * which re-reads every course changed while the pages were read.
   *
   * @throws MirrorError on any answer but 200.
   */
  async fullSync(): Promise<void> {
    // Before the first page: whatever is accepted from now on is in the feed from here.
    this.feedSince = new Date(this.now()).toISOString();
    let cursor: string | undefined;
    let snapshot: string | undefined;
    for (;;) {
      const page = await this.read("fullSync", `/v3/courses?limit=${this.pageSize}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      if (page.status !== 200) throw new MirrorError(`listing answered ${page.status}: ${JSON.stringify(page.body)}`);
      snapshot ??= page.body.pagination.changesCursor as string;
      for (const record of page.body.result) this.apply(record);
      cursor = page.body.pagination.nextCursor ?? undefined;
      if (!page.body.pagination.hasMore || !cursor) break;
    }
    this.changesCursor = snapshot;
    await this.catchUp(snapshot);
  }

  /**
   * Reads the change query from `after` (default: the mirror's `changesCursor`) to its end,
   * applying each course, and restarts the feed from just before this read.
   *
   * @throws MirrorError on any answer but 200.
   */
  async catchUp(after = this.changesCursor): Promise<void> {
    // A minute before the read: a read replica a few seconds behind may miss a change the
    // hub accepted just before; the feed's overlap brings it (applied once, by version).
    const since = new Date(this.now() - FEED_OVERLAP_MS).toISOString();
    let cursor = after;
    for (;;) {
      const page = await this.read("catchUp", `/v3/courses/changes?limit=${this.pageSize}${cursor ? `&after=${encodeURIComponent(cursor)}` : ""}`);
      if (page.status !== 200) throw new MirrorError(`change query answered ${page.status}: ${JSON.stringify(page.body)}`);
      for (const record of page.body.result) this.apply(record);
      cursor = page.body.pagination.nextCursor as string;
      if (!page.body.pagination.hasMore) break;
    }
    this.changesCursor = cursor;
    // Every change after this read is accepted by the hub after `since`: the feed restarts there.
    this.feedCursor = undefined;
    this.feedSince = since;
  }

  /**
   * Handles one event (from the feed or a delivery): a course event's record is applied; a
   * `webhook.events_missed` notice starts a catch-up from its `resumeCursor`.
   */
  async onEvent(event: { type: string; data: Record<string, unknown> }): Promise<void> {
    if (COURSE_EVENT.test(event.type) && event.data.course) this.apply(event.data.course as Record<string, unknown>);
    if (event.type === "webhook.events_missed") {
      this.gaps += 1;
      await this.catchUp(later(event.data.resumeCursor as string | undefined, this.changesCursor));
    }
  }

  /**
   * Reads the feed from its position to its end. A `410 CURSOR_EXPIRED` (the mirror was away
   * longer than the retention) catches up from the cursor the error names, then reads on.
   *
   * @returns the events read.
   * @throws MirrorError on any other answer but 200.
   */
  async follow(): Promise<number> {
    let read = 0;
    let expired = false;
    // A start older than the retention would silently skip what aged out: catch up instead.
    if (!this.feedCursor && this.feedSince && Date.parse(this.feedSince) < this.now() - FEED_RETENTION_MS) await this.catchUp();
    for (;;) {
      const from = this.feedCursor
        ? `after=${encodeURIComponent(this.feedCursor)}`
        : `since=${encodeURIComponent(this.feedSince ?? new Date(0).toISOString())}`;
      const page = await this.read("feed", `/v3/events?limit=100&${from}`);
      if (page.status === 410 && page.body.code === "CURSOR_EXPIRED") {
        // A catch-up restarts the feed from `since`: a second 410 in a row means the clocks disagree.
        if (expired) throw new MirrorError(`the feed answered 410 again right after a catch-up: ${JSON.stringify(page.body)}`);
        expired = true;
        this.gaps += 1;
        await this.catchUp(later(resumeCursorOf(page.body), this.changesCursor));
        continue;
      }
      if (page.status !== 200) throw new MirrorError(`feed answered ${page.status}: ${JSON.stringify(page.body)}`);
      expired = false;
      for (const event of page.body.result) await this.onEvent(event);
      read += page.body.result.length;
      this.feedCursor = page.body.pagination.nextCursor;
      if (!page.body.pagination.hasMore) return read;
    }
  }
}

/**
 * The later of two change cursors (`chg_<n>`), either absent. Each is a safe place to resume
 * from — the API's names no change after one the reader missed, the mirror's own was read
 * before everything it followed since — so the later costs less and misses nothing.
 */
function later(a: string | undefined, b: string | undefined): string | undefined {
  const n = (c: string | undefined) => (c === undefined ? -1 : (decodeChangeCursor(c) ?? -1));
  return n(a) >= n(b) ? a : b;
}

/**
 * The feed cursor `cursor` (`c1.<seq>.<at>`, src/webhooks/api/feed.ts) at the same position but
 * `ms` older: a reader back from an outage that long (the benchmark and the test simulate one).
 */
export function agedFeedCursor(cursor: string, ms: number): string {
  const [version, seq, at] = cursor.split(".");
  return `${version}.${seq}.${(Number.parseInt(at!, 36) - ms).toString(36)}`;
}

/** The change cursor a `410 CURSOR_EXPIRED` names to resume from (docs/reference.md § Events feed). */
// biome-ignore lint/suspicious/noExplicitAny: the error envelope, read field by field.
function resumeCursorOf(body: any): string | undefined {
  // `details: [{ "parameter": "after", "message": "… resume the change query after chg_N" }]`
  for (const d of body.details ?? []) {
    const found = d.parameter === "after" && typeof d.message === "string" ? /\bchg_[0-9]+\b/.exec(d.message) : null;
    if (found) return found[0];
  }
  return undefined;
}
