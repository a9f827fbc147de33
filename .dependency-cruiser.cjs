/**
 * The layers of docs/architecture.md § "Layers", checked by `npm run check:deps` (dependency-cruiser):
 * each layer of src/ imports only from the layers below it, and nothing imports in a cycle.
 *
 *   entries (src/index.ts, src/bench/entry.ts, src/api.ts)
 *   src/portal/ > src/openapi/ > src/webhooks/ > src/events/ > src/courses/ > src/db/ > src/http/ > src/lib/
 *
 * Sources are parsed with swc, which keeps type-only imports (a type is a dependency too):
 * dependency-cruiser's other TypeScript reader is the `typescript` package's compiler API,
 * which TypeScript 7 (the project's type checker) no longer publishes.
 */
const LAYERS = ["lib", "http", "db", "courses", "events", "webhooks", "openapi", "portal"];

/** A rule forbidding `layer` to import any layer above it (or an entry module). */
const layerRule = (layer, i) => ({
  name: `${layer}-imports-downwards`,
  comment: `src/${layer}/ may import only ${i === 0 ? "nothing else in src/" : `src/{${LAYERS.slice(0, i).join(",")}}/`} (docs/architecture.md § "Layers").`,
  severity: "error",
  from: { path: `^src/${layer}/` },
  to: { path: "^src/", pathNot: `^src/(${LAYERS.slice(0, i + 1).join("|")})/` },
});

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "No import cycle, type imports included.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    ...LAYERS.map(layerRule),
    {
      name: "http-knows-no-domain",
      comment: "src/http/ depends on zod, itty-router and src/lib/ only (docs/architecture.md § Layers).",
      severity: "error",
      from: { path: "^src/http/" },
      to: { dependencyTypes: ["npm"], pathNot: "^node_modules/(zod|itty-router)/" },
    },
    {
      name: "webhook-api-reaches-objects-by-rpc",
      comment: "The webhook operations call the SchoolHub and the couriers only through their RPC stubs and src/webhooks/rpc.ts (docs/architecture.md).",
      severity: "error",
      from: { path: "^src/webhooks/api/" },
      to: { path: "^src/webhooks/(hub|courier)/" },
    },
    {
      name: "courier-knows-no-hub",
      comment: "A courier imports the delivery rules and the platform seam, never the hub's code (it calls the hub by RPC).",
      severity: "error",
      from: { path: "^src/webhooks/courier/" },
      to: { path: "^src/webhooks/(hub|api)/", pathNot: "^src/webhooks/api/stats-schemas\\.ts$" },
    },
    {
      name: "hub-knows-no-courier",
      comment: "The hub reaches couriers only by RPC (hub/couriers.ts), never through their code.",
      severity: "error",
      from: { path: "^src/webhooks/hub/" },
      to: { path: "^src/webhooks/(courier|api)/" },
    },
    {
      name: "delivery-rules-are-leaves",
      comment: "Signing, the schedule, the URL policy and the platform seam depend on no webhook role.",
      severity: "error",
      from: { path: "^src/webhooks/(delivery|platform)/" },
      to: { path: "^src/webhooks/(api|hub|courier)/" },
    },
    {
      name: "service-never-imports-bench",
      comment: "The benchmark entry (src/bench/) builds on the service; nothing of the service imports it.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/bench/" },
      to: { path: "^src/bench/" },
    },
    {
      name: "src-stays-in-src",
      comment: "The Worker does not import the operator scripts or the tests.",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^(scripts|test)/" },
    },
    {
      name: "not-to-unresolvable",
      comment: "Every import resolves.",
      severity: "error",
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(dist|\\.wrangler|test/client)/" },
    parser: "swc",
    tsConfig: { fileName: "tsconfig.json" },
    // `cloudflare:workers`, `cloudflare:test` and `node:*` are provided by the runtime.
    builtInModules: { add: ["cloudflare:workers", "cloudflare:test"] },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default", "types"] },
  },
};
