/**
 * Builds the self-tests' migrated local state when this machine has none (`npm run test:state`;
 * `migratedTemplate`, scripts/lib/selftest.ts), so that `npm test` builds it beside the static
 * checks, not while the self-tests wait on it (docs/development.md § Suite time). Prints its
 * path and the seconds it took; exits 1 when wrangler fails to migrate it.
 */
import { migratedTemplate } from "./lib/selftest";

const started = performance.now();
const template = await migratedTemplate();
console.log(`self-test state: ${template} (${((performance.now() - started) / 1000).toFixed(1)} s)`);
