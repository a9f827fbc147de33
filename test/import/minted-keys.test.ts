/**
 * One alphabet for the keys `npm run keys -- create` mints and the keys the import accepts
 * (docs/operations.md § "API keys" and § "Data import"): every minted `sk_live_` key (base64url,
 * `-` and `_` included) can be carried to another environment by the import.
 */
import { describe, expect, it } from "vitest";
import { newApiKey } from "../../src/db/api-keys";
import { validateImport } from "../../src/db/import";

describe("keys minted by the keys CLI", () => {
  it("1,000 of them all pass the import's validation, local and --remote", async () => {
    const keys: string[] = [];
    for (let i = 0; i < 1000; i++) keys.push((await newApiKey("sch_minted", null)).key);
    // The case that failed: about half of the keys hold a `-`.
    expect(keys.filter((k) => k.includes("-")).length).toBeGreaterThan(100);
    for (const k of keys) expect(k).toMatch(/^sk_live_[A-Za-z0-9_-]{43}$/);
    const file = { schools: [{ id: "sch_minted", name: "Minted", apiKeys: keys }] };
    expect(validateImport(file)).toMatchObject({ ok: true });
    expect(validateImport(file, { remote: true })).toMatchObject({ ok: true });
  });
});
