/**
 * API keys with chosen scopes and expiry, stored in the directory as `npm run keys -- create`
 * stores them (docs/reference.md § Scopes), for the scope tests.
 */
import { env } from "cloudflare:workers";
import { sha256Hex } from "../../src/lib/crypto";

let keys = 0;

/**
 * Stores a new API key of `schoolId` with `scopes` (names joined by single spaces, the stored
 * form) and `expiresAt` (ms; `null`: never), and returns it.
 */
export async function keyWithScopes(schoolId: string, scopes: string, expiresAt: number | null = null): Promise<string> {
  keys += 1;
  const key = `sk_test_scoped_${keys}_${crypto.randomUUID().replaceAll("-", "")}`;
  await env.DIRECTORY.prepare("INSERT INTO api_keys (key_hash, school_id, created_at, id, scopes, expires_at) VALUES (?, ?, ?, ?, ?, ?)")
    .bind(await sha256Hex(key), schoolId, Date.now(), `key_scoped_${keys}_${crypto.randomUUID().slice(0, 8)}`, scopes, expiresAt)
    .run();
  return key;
}

/** Every scope of the contract (docs/reference.md § Scopes), written out: the tests' own list. */
export const ALL_SCOPES = ["courses:read", "courses:write", "students:read", "webhooks:read", "webhooks:write", "events:read", "portal"];

/** Every scope but `scope`, in the stored form. */
export const allBut = (scope: string): string => ALL_SCOPES.filter((s) => s !== scope).join(" ");
