#!/usr/bin/env node
// Regenerates crates/pi-registry/data/typed-models.json from the reference (Pi 1.6.0's pi-ai): the
// built-in classifier and image models, which chat listings never show. One object keyed by
// provider id, in pi-ai's provider order, each holding that provider's non-chat models as pi-ai
// lists them (`getAllModels()` minus the chat models), so order and fields are the reference's.
//
// Usage (Node >= 22):  node crates/pi-registry/scripts/gen-typed-models.mjs [<node_modules dir>]

import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const nodeModules = process.argv[2] ?? "/work/ref/pi16/node_modules";
const piAi = join(nodeModules, "@earendil-works/pi-ai/dist");
const { builtinProviders } = await import(pathToFileURL(join(piAi, "providers/all.js")).href);

const out = {};
for (const provider of builtinProviders()) {
  const all = provider.getAllModels?.() ?? provider.getModels();
  const typed = all.filter((model) => (model.type ?? "chat") !== "chat");
  if (typed.length > 0) out[provider.id] = typed;
}
const dataDir = join(dirname(fileURLToPath(import.meta.url)), "..", "data");
writeFileSync(join(dataDir, "typed-models.json"), `${JSON.stringify(out)}\n`);
