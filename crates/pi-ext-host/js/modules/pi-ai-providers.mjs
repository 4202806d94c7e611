// @earendil-works/pi-ai/providers/all: the built-in model catalogue, answered from pi's registry.
import { modelsQuery } from "../lib/state.mjs";
import { unavailable } from "./inert.mjs";

export const getAllBuiltinModels = () => modelsQuery("all") ?? [];
export const getBuiltinModels = (provider) => getAllBuiltinModels().filter((m) => m.provider === provider);
export const getBuiltinModel = (provider, id) => modelsQuery("find", { provider, id }) ?? undefined;
export const getBuiltinProviders = () => (modelsQuery("providers") ?? []).map((p) => (typeof p === "string" ? p : p.id));
export const builtinModels = getAllBuiltinModels;
export const builtinProviders = getBuiltinProviders;
export const getBuiltinModelDataGeneratedAt = () => undefined;
export const getBuiltinClassifierModel = () => undefined;
export const getBuiltinClassifierModels = () => [];
export const getBuiltinImageModel = () => undefined;
export const getBuiltinImageModels = () => [];
export const radiusProvider = unavailable("radiusProvider");
