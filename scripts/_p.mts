import { DatabaseSync } from "node:sqlite";
import { localD1File, statementsOf } from "./lib/sqlite-alone";
const db = new DatabaseSync(localD1File(process.argv[2]!), { readOnly: true });
for (const p of process.argv.slice(3)) {
  const [, page] = await statementsOf("sk_demo_0123456789", "GET", p);
  const rows = db.prepare(`EXPLAIN QUERY PLAN ${page!.sql}`).all(...(page!.params as never[]));
  console.log(p, "\n ", rows.filter((r: any) => !/SUBQUERY|CO-ROUTINE|SCAN \(sub|r USING|api_keys/.test(r.detail)).map((r: any) => r.detail).join("\n  "));
}
