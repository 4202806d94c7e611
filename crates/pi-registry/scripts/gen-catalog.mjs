#!/usr/bin/env node
// Regenerates crates/pi-registry/data/ from the reference (Pi 1.6.0's pi-ai and coding-agent packages):
//
//   catalog.jsonl       line 1: {generatedAt, generatedAtMs, providers:[{id,name,baseUrl?}], defaultModels}
//                       line 2: [[[id, name], ...] per provider]: an index for resolving --model patterns
//                               without parsing every model
//                       line 3+i: the chat models of providers[i], exactly as pi-ai lists them
//   models-schema.json  the JSON Schema Pi validates models.json with (descriptions and defaults dropped)
//
// Usage (Node >= 22):  node crates/pi-registry/scripts/gen-catalog.mjs [<node_modules dir>]
// Default node_modules: /work/ref/pi16/node_modules (the reference install of the conformance recorder).
//
// The models come from pi-ai's own provider objects, so ordering, de-duplication by id and the chat
// filter are the reference's, not a re-implementation of them.

import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const nodeModules = process.argv[2] ?? "/work/ref/pi16/node_modules";
const piAi = join(nodeModules, "@earendil-works/pi-ai/dist");
const agent = join(nodeModules, "@earendil-works/pi-coding-agent/dist");
const load = (path) => import(pathToFileURL(path).href);

const { builtinProviders, getBuiltinModelDataGeneratedAt } = await load(join(piAi, "providers/all.js"));
const { ModelsConfigSchema } = await load(join(agent, "core/model-config.js"));
const { defaultModelPerProvider } = await load(join(agent, "core/model-resolver.js"));
const manifest = (await import(pathToFileURL(join(piAi, "providers/data/.manifest.json")).href, { with: { type: "json" } }))
  .default;

const dataDir = join(dirname(fileURLToPath(import.meta.url)), "..", "data");

const providers = builtinProviders();
const header = {
  generatedAt: manifest.generatedAt,
  generatedAtMs: getBuiltinModelDataGeneratedAt(),
  providers: providers.map((p) => ({ id: p.id, name: p.name, ...(p.baseUrl ? { baseUrl: p.baseUrl } : {}) })),
  defaultModels: defaultModelPerProvider,
};
const modelLines = [];
const index = [];
let count = 0;
for (const provider of providers) {
  const models = provider.getModels();
  count += models.length;
  index.push(models.map((m) => [m.id, m.name]));
  modelLines.push(JSON.stringify(models));
}
const lines = [JSON.stringify(header), JSON.stringify(index), ...modelLines];
writeFileSync(join(dataDir, "catalog.jsonl"), `${lines.join("\n")}\n`);

// Descriptions and defaults are documentation; validation never reads them.
function strip(value) {
  if (Array.isArray(value)) return value.map(strip);
  if (value === null || typeof value !== "object") return value;
  const out = {};
  for (const [key, child] of Object.entries(value)) {
    if (key === "description" || key === "default") continue;
    out[key] = key === "properties" || key === "patternProperties"
      ? Object.fromEntries(Object.entries(child).map(([k, v]) => [k, strip(v)]))
      : strip(child);
  }
  return out;
}
writeFileSync(join(dataDir, "models-schema.json"), `${JSON.stringify(strip(ModelsConfigSchema))}\n`);

console.error(`catalog.jsonl: ${providers.length} providers, ${count} chat models; models-schema.json written`);
