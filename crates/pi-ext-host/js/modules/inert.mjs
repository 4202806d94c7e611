// Stand-ins for TUI classes: there is no terminal in the extension host, so components construct
// without error, accept any method call, and render nothing. Subclassing works (extensions extend
// CustomEditor and friends).

const PASSTHROUGH = new Set(["then", "toJSON", "constructor", "valueOf", "toString"]);
const noop = () => undefined;

export class InertComponent {
	constructor(...args) {
		this.children = [];
		this.constructorArgs = args;
		// Unknown members are no-op methods, so any component API call is harmless.
		// biome-ignore lint/correctness/noConstructorReturn: deliberate proxy
		return new Proxy(this, {
			get(target, prop, receiver) {
				if (typeof prop === "symbol" || PASSTHROUGH.has(prop) || prop in target) {
					return Reflect.get(target, prop, receiver);
				}
				return noop;
			},
		});
	}

	render() {
		return [];
	}

	invalidate() {}

	handleInput() {}

	dispose() {}

	addChild(child) {
		this.children.push(child);
	}

	removeChild(child) {
		const index = this.children.indexOf(child);
		if (index !== -1) this.children.splice(index, 1);
	}

	clear() {
		this.children = [];
	}
}

/** A class named `name` deriving from InertComponent (keeps `.name` for diagnostics). */
export function inertClass(name) {
	return { [name]: class extends InertComponent {} }[name];
}

/** A function that fails with a clear message when an extension calls it. */
export function unavailable(name) {
	return {
		[name]() {
			throw new Error(`${name}() is not available in the pi extension host`);
		},
	}[name];
}

/** A class whose construction fails with a clear message. */
export function unavailableClass(name) {
	return {
		[name]: class {
			constructor() {
				throw new Error(`${name} is not available in the pi extension host`);
			}
		},
	}[name];
}
