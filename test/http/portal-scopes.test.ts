/**
 * What the portal says the tab's credential may do (portal/src/scopes.ts; docs/reference.md
 * § "Webhook portal: GET /portal"): the scopes GET /v3/school reports, in words, and what a
 * credential implies when the server reports none. The page's use of them in a browser is
 * `npm run test:e2e`'s.
 */
import { describe, expect, it } from "vitest";
import { effectiveScopes, mayText } from "../../portal/src/scopes";

describe("portal: what the credential may do", () => {
  it("says the reported scopes in words, in the scopes' order", () => {
    const scopes = effectiveScopes({ scopes: ["events:read", "webhooks:write", "webhooks:read"], session: { readOnly: false } });
    expect(mayText("link", scopes)).toBe("This link may: view webhooks, change webhooks, read the event feed.");
    expect(mayText("key", effectiveScopes({ scopes: ["courses:read", "students:read", "portal", "courses:write"], session: null }))).toBe(
      "This key may: read courses, change courses, read students' names and emails, create portal links.",
    );
    expect(mayText("link", effectiveScopes({ scopes: [], session: { readOnly: false } }))).toBe("This link may do nothing.");
  });

  it("a read-only session never may change webhooks; names the page does not know are passed over", () => {
    expect([...effectiveScopes({ scopes: ["webhooks:read", "webhooks:write", "events:write"], session: { readOnly: true } })]).toEqual(["webhooks:read"]);
  });

  it("without reported scopes: a key may do everything; a session the webhook operations and the feed, less changes when read-only", () => {
    expect(mayText("key", effectiveScopes({ scopes: null, session: null }))).toBe(
      "This key may: read courses, change courses, read students' names and emails, view webhooks, change webhooks, read the event feed, create portal links.",
    );
    expect(mayText("link", effectiveScopes({ scopes: null, session: { readOnly: false } }))).toBe(
      "This link may: view webhooks, change webhooks, read the event feed.",
    );
    expect(mayText("link", effectiveScopes({ scopes: null, session: { readOnly: true } }))).toBe("This link may: view webhooks, read the event feed.");
  });
});
