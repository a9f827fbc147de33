/**
 * Schema migrations of a Durable Object's own SQLite storage, applied in its constructor
 * before any call reaches it: `meta.schema_version` records how many ran.
 */

/** Applies the migrations not applied yet, in order (synchronous). Append to the list, never edit it. */
export function applyMigrations(sql: SqlStorage, migrations: readonly (readonly string[])[]): void {
  sql.exec(`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
  const row = sql.exec<{ value: string }>(`SELECT value FROM meta WHERE key = 'schema_version'`).toArray()[0];
  let version = row ? Number(row.value) : 0;
  while (version < migrations.length) {
    for (const statement of migrations[version]!) sql.exec(statement);
    version += 1;
    sql.exec(`INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)`, String(version));
  }
}
