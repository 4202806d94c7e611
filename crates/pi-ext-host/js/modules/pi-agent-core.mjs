// @earendil-works/pi-agent-core in the extension host. The agent loop runs in pi (Rust), so the
// runtime names exist but fail clearly when used; extensions mostly import its types.
import { unavailable, unavailableClass } from "./inert.mjs";

export const DEFAULT_AGENT_IDENTITY = Object.freeze({
	attribution: Object.freeze({ name: "pi", url: "https://pi.dev", categories: Object.freeze(["cli-agent"]) }),
});

export const Agent = unavailableClass("Agent");
export const agentLoop = unavailable("agentLoop");
export const agentLoopContinue = unavailable("agentLoopContinue");
export const runAgentLoop = unavailable("runAgentLoop");
export const runAgentLoopContinue = unavailable("runAgentLoopContinue");
export const runToolCall = unavailable("runToolCall");
export const setDefaultStreamFn = unavailable("setDefaultStreamFn");
export const streamProxy = unavailable("streamProxy");
