/**
 * The numbers of the contract (docs/reference.md) that more than one layer states: the rule that
 * enforces each one and the error catalogue or document that tells it read them here.
 */

/** Largest accepted request body, in bytes (1 MiB; beyond: 413 PAYLOAD_TOO_LARGE). */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Max ids per list in a GET query string (beyond: 400 TOO_MANY_IDS). */
export const GET_MAX_IDS = 100;

/** Max ids per list in a search body (beyond: 400 VALIDATION_ERROR). */
export const SEARCH_MAX_IDS = 10_000;

/** Max `page` of a paginated list: keeps `(page - 1) * limit` a safe SQLite integer. */
export const MAX_PAGE = 1_000_000;

/** Max `limit` (items per page) of a paginated list; also its default. */
export const MAX_PAGE_SIZE = 100;

/** Most webhook registrations a school may have (beyond: 409 WEBHOOK_LIMIT_REACHED). */
export const MAX_WEBHOOKS = 50;

/** Most live (unexpired, unrevoked) portal sessions a school may have (beyond: 409 PORTAL_SESSION_LIMIT_REACHED). */
export const MAX_LIVE_PORTAL_SESSIONS = 100;

/**
 * Most portal session rows a school may store: links and opened sessions, live or ended (an
 * expired row stays a day after its end, a revoked one a day after its revocation: the
 * cron's prune). A mint counts for two (its link and the session its redeem will add), so a
 * redeem never passes it; beyond, minting answers 409 PORTAL_SESSION_LIMIT_REACHED.
 */
export const MAX_STORED_PORTAL_SESSIONS = 1000;

/**
 * Default daily quota of a school's write bytes, events published and rows stored
 * (`EVENT_BYTES_PER_DAY`, docs/operations.md § Deployment settings (wrangler vars)):
 * 100,000,000 bytes (100 MB) per UTC day; beyond, course writes answer 429 EVENT_QUOTA_EXCEEDED.
 */
export const DEFAULT_EVENT_BYTES_PER_DAY = 100_000_000;

/**
 * The most event bytes a school's imports may take its day to (docs/reference.md § "Event
 * quota", docs/operations.md § "Data import (operators)"): 1,000,000,000 bytes (1 GB), ten
 * times the default quota. Imports are counted with the school's writes but not refused by
 * its quota; this bounds what they add to the school's hub in a day (about 1.5 million
 * course events of 650 bytes).
 */
export const IMPORT_EVENT_BYTES_PER_DAY = 1_000_000_000;

/** Most long polls (`GET /v3/events?wait=…`) of one school waiting at once; beyond, `wait` counts as 0. */
export const MAX_WAITING_POLLS = 100;

/**
 * Most bytes (UTF-8) of event bodies in one page of the events feed (`GET /v3/events`): a page
 * ends before the event that would pass it, but always holds one, so a cursor always moves
 * (a stored event is at most 2,000,000 bytes). Keeps a page far under the 32 MiB of an RPC
 * answer whatever `limit` events weigh (docs/reference.md § "Events feed").
 */
export const FEED_PAGE_BYTES = 4_000_000;

/**
 * Bytes of events a long poll's page holds at most once it waited (at least one event): the
 * woken polls of one school together hold about one page's FEED_PAGE_BYTES, not
 * MAX_WAITING_POLLS pages at once (docs/reference.md § Events feed).
 */
export const WOKEN_FEED_PAGE_BYTES = FEED_PAGE_BYTES / MAX_WAITING_POLLS;

/** Longest secret-rotation grace, in seconds (7 days; docs/reference.md § "Secret rotation"). */
export const MAX_GRACE_SECONDS = 604_800;
/** Default secret-rotation grace, in seconds (24 h). */
export const DEFAULT_GRACE_SECONDS = 86_400;

/**
 * How long events and delivery attempts are kept, in ms (7 days): the hub's event log and
 * feed, each courier's attempt log, resend and recover (docs/reference.md § "Delivery log", § "Events feed").
 */
export const RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * A recover's answer counts the events it will queue up to this many (docs/reference.md §
 * "Recover"): beyond, `queued` is this and `exact` false. Bounds the answering step's read.
 */
export const RECOVER_COUNT_CAP = 10_000;
