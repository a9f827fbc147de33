/**
 * An `env` whose D1 bindings and SchoolHub stubs count what they send on an
 * `InvocationBudget` (src/lib/invocation-budget.ts): the cron counts its own queries and hub
 * calls, whatever module sends them.
 */
import { shardBindings } from "../db/shard-names";
import type { InvocationBudget } from "../lib/invocation-budget";

/** `db` (a binding or a session) counting each statement it runs; a batch counts each of its statements. */
function countingD1<D extends object>(db: D, budget: InvocationBudget): D {
  return new Proxy(db, {
    get(target, prop) {
      const t = target as unknown as D1Database;
      if (prop === "prepare") return (query: string) => countingStatement(t.prepare(query), budget);
      if (prop === "batch") {
        return (statements: D1PreparedStatement[]) => {
          budget.countQueries(statements.length);
          return t.batch(statements.map((s) => unwrapped.get(s) ?? s));
        };
      }
      // `exec` runs the statements of its text: the cron sends it one (`PRAGMA optimize`).
      if (prop === "exec") {
        return (query: string) => {
          budget.countQueries(1);
          return t.exec(query);
        };
      }
      if (prop === "withSession") return (...args: Parameters<D1Database["withSession"]>) => countingD1(t.withSession(...args), budget);
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The runtime's statement behind each counting one (a batch takes the runtime's own). */
const unwrapped = new WeakMap<object, D1PreparedStatement>();

function countingStatement(inner: D1PreparedStatement, budget: InvocationBudget): D1PreparedStatement {
  const counted = new Proxy(inner, {
    get(target, prop) {
      if (prop === "bind") return (...values: unknown[]) => countingStatement(target.bind(...values), budget);
      if (prop === "first" || prop === "all" || prop === "run" || prop === "raw") {
        return (...args: unknown[]) => {
          budget.countQueries(1);
          return (target[prop] as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  unwrapped.set(counted, inner);
  return counted;
}

/** The SchoolHub namespace whose stubs count each `publish` call (the only call the cron makes). */
function countingHubs(ns: Env["SCHOOL_HUB"], budget: InvocationBudget): Env["SCHOOL_HUB"] {
  return new Proxy(ns, {
    get(target, prop) {
      if (prop === "get") {
        return (...args: Parameters<Env["SCHOOL_HUB"]["get"]>) => {
          const stub = target.get(...args);
          return new Proxy(stub, {
            get(s, p) {
              if (p !== "publish") return Reflect.get(s, p);
              return (...a: Parameters<typeof stub.publish>) => {
                budget.countCall();
                return s.publish(...a);
              };
            },
          });
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** `env` with `DIRECTORY`, every `SHARD_<n>` and `SCHOOL_HUB` counting on `budget`. */
export function meteredEnv(env: Env, budget: InvocationBudget): Env {
  const d1 = ["DIRECTORY", ...shardBindings(env)].filter((b) => b in env);
  const wrapped = Object.fromEntries(d1.map((b) => [b, countingD1((env as unknown as Record<string, D1Database>)[b]!, budget)]));
  return { ...env, ...wrapped, SCHOOL_HUB: countingHubs(env.SCHOOL_HUB, budget) };
}
