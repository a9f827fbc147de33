/**
 * A SQLite-backed Durable Object's production limits, enforced around its storage
 * (https://developers.cloudflare.com/durable-objects/platform/limits/; the numbers and checks are
 * test/support/production-limits.ts's): every `sql.exec` is checked before it runs (bound
 * parameters, SQL bytes, bound values, SQL function arguments, LIKE/GLOB patterns), every row it
 * returns as it is read, every stored row by triggers installed after each statement that creates
 * or alters a table (wherever in its text), every key-value pair put (within 2 MB as serialized)
 * and every key-value call of many keys (at most 128), on the storage, `kv` and the transactions
 * of `transaction(txn => …)`. The local runtime accepts an 8,000,000-byte value, a 3,000,000-byte
 * pair and 200 keys in one call. setup.ts installs it for every webhook object (`useStorageSeam`).
 */
import { changesSchema, checkKvKeys, checkKvPut, checkRows, checkStatement, GUARDED_COLUMNS_SQL, guardTriggers, SEAM_TRIGGERS_SQL } from "./production-limits";

/** A cursor whose rows are checked as they are read. */
function checkedCursor<T extends Record<string, SqlStorageValue>>(cursor: SqlStorageCursor<T>): SqlStorageCursor<T> {
  return new Proxy(cursor, {
    get(target, prop) {
      if (prop === "toArray") {
        return () => {
          const rows = target.toArray();
          checkRows("durable-object", rows);
          return rows;
        };
      }
      if (prop === "one") {
        return () => {
          const row = target.one();
          checkRows("durable-object", [row]);
          return row;
        };
      }
      if (prop === "next") {
        return () => {
          const r = target.next();
          if (!r.done) checkRows("durable-object", [r.value]);
          return r;
        };
      }
      if (prop === Symbol.iterator) {
        return function* () {
          for (let r = target.next(); !r.done; r = target.next()) {
            checkRows("durable-object", [r.value]);
            yield r.value;
          }
        };
      }
      if (prop === "raw") {
        return () => {
          const rows = target.raw();
          return (function* () {
            for (const row of rows) {
              checkRows("durable-object", [row]);
              yield row;
            }
          })();
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** `sql` with production's limits checked on each `exec` (everything else passes through). */
function limitedSql(sql: SqlStorage): SqlStorage {
  const guard = () => {
    const rows = sql.exec<{ tbl: string; col: string }>(GUARDED_COLUMNS_SQL).toArray();
    for (const s of guardTriggers(rows)) sql.exec(s);
  };
  // Tables that exist already (an object constructed again) are guarded at once.
  guard();
  return new Proxy(sql, {
    get(target, prop) {
      if (prop === "exec") {
        return (query: string, ...bindings: unknown[]) => {
          checkStatement("durable-object", query, bindings);
          if (!changesSchema(query)) return checkedCursor(target.exec(query, ...bindings));
          // SQLite refuses to drop or rename a column a trigger names: the guards step aside
          // for the change, then a new table or column is guarded before anything is stored in it.
          for (const { name } of target.exec<{ name: string }>(SEAM_TRIGGERS_SQL).toArray()) target.exec(`DROP TRIGGER "${name}"`);
          try {
            return checkedCursor(target.exec(query, ...bindings));
          } finally {
            guard();
          }
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** `kv` (the synchronous key-value API) with production's pair size checked on `put`. */
function limitedKv(kv: SyncKvStorage): SyncKvStorage {
  return new Proxy(kv, {
    get(target, prop) {
      if (prop === "put") {
        return (key: string, value: unknown) => {
          checkKvPut(key, value);
          return target.put(key, value);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The asynchronous key-value API of `target` (the storage or a transaction) with the pair size and the key count checked. */
function limitedAsyncKv(target: DurableObjectStorage | DurableObjectTransaction, prop: string | symbol): unknown {
  if (prop === "put") {
    return (keyOrEntries: string | Record<string, unknown>, value?: unknown, options?: DurableObjectPutOptions) => {
      if (typeof keyOrEntries === "string") checkKvPut(keyOrEntries, value);
      else {
        const entries = Object.entries(keyOrEntries);
        checkKvKeys(entries.length);
        for (const [k, v] of entries) checkKvPut(k, v);
      }
      return typeof keyOrEntries === "string" ? target.put(keyOrEntries, value, options) : target.put(keyOrEntries, value as DurableObjectPutOptions);
    };
  }
  if (prop === "get" || prop === "delete") {
    return (keys: string | string[], options?: DurableObjectGetOptions) => {
      if (Array.isArray(keys)) checkKvKeys(keys.length);
      return (target[prop] as (k: string | string[], o?: DurableObjectGetOptions) => unknown)(keys, options);
    };
  }
  const value = Reflect.get(target, prop, target);
  return typeof value === "function" ? value.bind(target) : value;
}

/**
 * `storage` with production's limits on its SQL (`limitedSql`), its synchronous key-value API
 * (`kv.put`) and its asynchronous one (`put` of one pair or of an object of pairs, `get` and
 * `delete` of many keys), inside `transaction(txn => …)` too.
 */
export function limitedStorage(storage: DurableObjectStorage): DurableObjectStorage {
  const sql = limitedSql(storage.sql);
  const kv = limitedKv(storage.kv);
  return new Proxy(storage, {
    get(target, prop) {
      if (prop === "sql") return sql;
      if (prop === "kv") return kv;
      if (prop === "transaction") {
        return <T>(closure: (txn: DurableObjectTransaction) => Promise<T>) =>
          target.transaction((txn) => closure(new Proxy(txn, { get: (t, p) => limitedAsyncKv(t, p) })));
      }
      return limitedAsyncKv(target, prop);
    },
  });
}
