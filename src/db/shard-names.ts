/**
 * The names of the shards' D1 bindings (docs/reference.md § Database shards): every binding
 * named `SHARD_<n>` is a shard. Pure, with no Workers type, so that the scripts (which read
 * wrangler.toml) share it with the Worker (src/db/shards.ts).
 */

/** A shard's binding name: `SHARD_` and its number. */
export const SHARD_BINDING_RE = /^SHARD_(0|[1-9][0-9]{0,3})$/;

/** The shard bindings of `env`, in their numbers' order (`SHARD_0`, `SHARD_1`, …, `SHARD_10`). */
export function shardBindings(env: object): string[] {
  return Object.keys(env)
    .filter((k) => SHARD_BINDING_RE.test(k))
    .sort((a, b) => Number(a.slice(6)) - Number(b.slice(6)));
}
