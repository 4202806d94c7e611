// Records Pi's own tool-argument validation (pi-ai's validateToolArguments over pi-schema) for a
// corpus of schemas and arguments, as tests/fixtures/validate_corpus.jsonl. The Rust test
// tests/validate.rs replays every case against pi_schema.
//
// Run with Node 22 from the repository root:
//   /work/ref/node22/package/bin/node crates/pi-agent/tests/validate_corpus.mjs
//
// The first line is {"schemas": [...]}; each further line is one case: {"n" (the tool name), "s"
// (an index into schemas), "a" (the arguments as JSON text, parsed by both sides),
// "argumentsError"?, then the result: nothing (valid as given), "ok" (the coerced arguments),
// "error" (the tool result text) or "failures" (the failure lines of a validation error, whose
// head and received arguments the test adds).

import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const REF = process.env.PI_REF ?? "/work/ref/pi16/node_modules/@earendil-works";
const { validateToolArguments } = await import(`${REF}/pi-ai/dist/utils/validation.js`);
const { createAllToolDefinitions } = await import(`${REF}/pi-coding-agent/dist/core/tools/index.js`);

const cases = [];
/** Adds one case per argument object (given as JSON text, or as a value to stringify). */
function add(name, schema, argsList, argumentsError) {
	for (const args of argsList) {
		const text = typeof args === "string" ? args : JSON.stringify(args);
		cases.push({ name, schema, args: text, ...(argumentsError === undefined ? {} : { argumentsError }) });
	}
}

// Values that probe every coercion rule, as JSON text.
const PROBES = [
	'"abc"', '""', '" "', '"2"', '" 12 "', '"2.5"', '"-0"', '"0x1F"', '"0b101"', '"0o17"', '"1e3"', '"1e400"',
	'"Infinity"', '"-Infinity"', '"12n"', '"-7n"', '"99999999999999999999n"', '"3.75.1"', '"1_000"', '"\\u00a012"',
	'"true"', '"TRUE"', '"True"', '"false"', '"FALSE"', '"1"', '"0"', '"yes"', '"null"', '"NULL"', '"undefined"',
	"0", "1", "2", "-1", "2.5", "-0", "1e21", "0.1", "9007199254740993", "1.5e-7", "true", "false", "null",
	"[]", '["x"]', "[1, 2]", '[["x"]]', "{}", '{"a": 1}', '[null]', '"[1,2]"', '"{\\"a\\":1}"',
];

// ---------------------------------------------------------------------------------------------
// Pi's built-in tools
// ---------------------------------------------------------------------------------------------

const defs = createAllToolDefinitions("/tmp");
const valid = {
	read: { path: "a.txt" },
	bash: { command: "ls" },
	powershell: { command: "dir" },
	edit: { path: "a.txt", edits: [{ oldText: "a", newText: "b" }] },
	write: { path: "a.txt", content: "x" },
	grep: { pattern: "foo" },
	find: { pattern: "*.ts" },
	ls: {},
};
for (const [key, def] of Object.entries(defs)) {
	const schema = JSON.parse(JSON.stringify(def.parameters));
	const base = valid[key];
	add(def.name, schema, [base, {}, { ...base, extra: 1 }]);
	for (const prop of Object.keys(schema.properties)) {
		const list = PROBES.map((p) => {
			const rest = JSON.stringify({ ...base, [prop]: undefined }).slice(1, -1);
			return `{${rest}${rest ? ", " : ""}"${prop}": ${p}}`;
		});
		add(def.name, schema, list);
	}
}
const editSchema = JSON.parse(JSON.stringify(defs.edit.parameters));
add("edit", editSchema, [
	{ path: "a", edits: { oldText: "x", newText: "y" } },
	{ path: "a", edits: [] },
	{ path: "a", edits: [{}] },
	{ path: "a", edits: [{ oldText: "x" }, { newText: 1 }, null, "s", [1]] },
	{ path: "a", edits: '[{"oldText":"x","newText":"y"}]' },
	{ path: "a", edits: [{ oldText: 1, newText: true }] },
	{ path: "a", edits: [{ oldText: null, newText: null }] },
	{ path: "a", edits: [{ oldText: "x", newText: "y", extra: [1, { z: null }] }] },
	{ path: null, edits: null },
	{ oldText: "x", newText: "y", path: "a" },
	'{"path":"a","edits":[{"oldText":"x","newText":"y"}],"edits2":{"1":true,"b":[],"a":{},"0":-0}}',
	'{"path":"ünï\\u0001\\u2028\\"\\\\/","edits":[{"oldText":"😀","newText":"\\t"}]}',
	'{"2":1,"path":"a","1":2,"edits":[]}',
]);
add("read", JSON.parse(JSON.stringify(defs.read.parameters)), [
	{ path: "a", offset: 1.0, limit: 1e21 },
	'{"path":"a","offset":1.0,"limit":-0}',
	'{"path":"a","offset":1e-7,"limit":123456789012345678901234567890}',
	{ path: ["a", "b"] },
	{ path: { nested: { deep: [1, 2, { x: "y" }] } } },
]);

// Arguments that could not be parsed, and an empty argumentsError (falsy in JavaScript).
add("read", JSON.parse(JSON.stringify(defs.read.parameters)), ["{}"], "Unexpected end of JSON input");
add("bash", JSON.parse(JSON.stringify(defs.bash.parameters)), ['{"command": 1}'], "");

// ---------------------------------------------------------------------------------------------
// Synthetic schemas: every keyword and coercion rule
// ---------------------------------------------------------------------------------------------

function prop(name, schema, { required = false } = {}) {
	return { type: "object", properties: { [name]: schema }, ...(required ? { required: [name] } : {}) };
}
/** Every probe in property `v` of a schema, required and optional. */
function probe(name, schema, extra = []) {
	for (const required of [true, false]) {
		const s = prop("v", schema, { required });
		add(name, s, [...PROBES.map((p) => `{"v": ${p}}`), "{}", ...extra]);
	}
}

probe("string", { type: "string" });
probe("number", { type: "number" });
probe("integer", { type: "integer" });
probe("boolean", { type: "boolean" });
probe("null", { type: "null" });
probe("array", { type: "array" });
probe("array_of_numbers", { type: "array", items: { type: "number" } });
probe("array_of_strings", { type: "array", items: { type: "string" }, minItems: 1 });
probe("object", { type: "object" });
probe("object_props", { type: "object", properties: { a: { type: "integer" } }, required: ["a"] });
probe("string_or_null", { type: ["string", "null"] });
probe("integer_or_string", { type: ["integer", "string"] });
probe("number_or_boolean", { type: ["number", "boolean"] });
probe("null_or_number", { type: ["null", "number"] });
probe("empty_type_list", { type: [] });
probe("unknown_type", { type: "foo" });
probe("odd_type_list", { type: [5, null, ["string", "x"], "integer"] });
probe("bytes", { type: "bytes" });
probe("enum_strings", { enum: ["a", "b", "1", "true"] });
probe("enum_mixed", { enum: [1, "two", null, true, 2.5] });
probe("enum_typed", { type: "string", enum: ["x", "2"] });
probe("enum_objects", { enum: [{ a: 1 }, [1, 2], "s"] });
probe("enum_long", { enum: Array.from({ length: 25 }, (_, i) => `v${i}`) });
probe("const_string", { const: "yes" });
probe("const_number", { const: 2 });
probe("const_true", { const: true });
probe("const_null", { const: null });
probe("const_object", { const: { a: [1, { b: null }] } });
probe("anyof_string_number", { anyOf: [{ type: "string" }, { type: "number" }] });
probe("anyof_number_string", { anyOf: [{ type: "number" }, { type: "string" }] });
probe("nullable_number", { anyOf: [{ type: "number" }, { type: "null" }] });
probe("nullable_array", { anyOf: [{ type: "array", items: { type: "integer" } }, { type: "null" }] });
probe("oneof_overlap", { oneOf: [{ type: "number" }, { type: "integer" }] });
probe("oneof_consts", { oneOf: [{ const: "a" }, { const: "b" }, { const: 3 }] });
probe("allof", { allOf: [{ type: "number" }, { minimum: 1 }, { maximum: 10 }] });
probe("allof_string_number", { allOf: [{ type: "string" }, { type: "number" }] });
probe("not_string", { not: { type: "string" } });
probe("if_then_else", { if: { type: "string" }, then: { minLength: 2 }, else: { type: "number", minimum: 5 } });
probe("if_only", { if: { type: "string" } });
probe("bounds", { type: "number", minimum: 0, maximum: 10, exclusiveMinimum: -1, exclusiveMaximum: 10.5 });
probe("exclusive", { type: "integer", exclusiveMinimum: 0, exclusiveMaximum: 3 });
probe("multiple_of", { type: "number", multipleOf: 0.5 });
probe("multiple_of_decimal", { type: "number", multipleOf: 0.0001 }, ['{"v": 0.0075}', '{"v": 0.00751}', '{"v": 1e300}']);
probe("multiple_of_zero", { type: "number", multipleOf: 0 });
probe("lengths", { type: "string", minLength: 2, maxLength: 3 }, ['{"v": "😀😀"}', '{"v": "é"}', '{"v": "😀😀😀😀"}']);
probe("length_float", { type: "string", minLength: 1.5 });
probe("nullable_keyword", { type: "string", nullable: true });
probe("default_keyword", { type: "number", default: 5 });
probe("untyped_bounds", { minimum: 3, maxLength: 2, minItems: 2, minProperties: 1 });
probe("true_schema", true);
probe("false_schema", false);
probe("empty_schema", {});

// Object keywords.
const objectCases = [
	"{}", '{"a": 1}', '{"a": "1", "b": "x"}', '{"a": null}', '{"b": null}', '{"x-1": "2", "y": true}',
	'{"a": 1, "b": 2, "c": 3, "d": 4}', '{"a/b": 1, "c~d": "x", "e.f": null}', '{"1": "2", "a": "3"}',
];
for (const [name, schema] of Object.entries({
	closed: { type: "object", properties: { a: { type: "integer" }, b: { type: "string" } }, additionalProperties: false },
	closed_required: {
		type: "object",
		required: ["a", "a", "z"],
		properties: { a: { type: "integer" } },
		additionalProperties: false,
	},
	additional_schema: { type: "object", properties: { a: { type: "integer" } }, additionalProperties: { type: "number" } },
	additional_true: { type: "object", additionalProperties: true, required: ["a"] },
	pattern_props: {
		type: "object",
		patternProperties: { "^x-": { type: "integer" }, "^[a-c]$": { type: "string" } },
		additionalProperties: false,
	},
	pattern_and_props: {
		type: "object",
		properties: { a: { type: "number" } },
		patternProperties: { "^a": { type: "integer" } },
	},
	property_names: { type: "object", propertyNames: { pattern: "^[a-z]+$", maxLength: 1 } },
	counts: { type: "object", minProperties: 1, maxProperties: 2 },
	dependent_required: { type: "object", dependentRequired: { a: ["b", "c"], b: "notarray" } },
	dependent_schemas: { type: "object", dependentSchemas: { a: { required: ["d"] }, b: { properties: { a: { type: "string" } } } } },
	dependencies: { type: "object", dependencies: { a: ["b"], b: { properties: { c: { type: "number" } }, required: ["c"] } } },
	dependencies_merged: {
		type: "object",
		dependentRequired: { a: ["b"], c: ["d"] },
		dependencies: { a: ["c"], e: { required: ["f"] } },
	},
	nested: {
		type: "object",
		required: ["a"],
		properties: {
			a: {
				type: "object",
				required: ["b"],
				properties: { b: { type: "array", items: { type: "object", properties: { c: { type: "integer" } }, required: ["c"] } } },
			},
		},
	},
	optional_null_object: { type: "object", properties: { a: { type: "object", properties: { b: { type: "number" } } }, b: { type: ["number", "null"] } } },
	null_in_additional: { type: "object", additionalProperties: { type: "object", properties: { x: { type: "number" } } } },
	null_in_pattern: { type: "object", patternProperties: { "^a": { type: "object", properties: { x: { type: "string" } } } } },
	required_null: { type: "object", required: ["a"], properties: { a: { type: "string" } } },
	ref_property_null: { type: "object", properties: { a: { $ref: "#/$defs/n" } }, $defs: { n: { type: "number" } } },
	false_property: { type: "object", properties: { a: false } },
})) {
	add(name, schema, objectCases);
	add(name, schema, ['{"a": {"b": [{"c": "1"}, {"c": 1.5}, {}, null]}}', '{"a": {"b": {"c": "2"}}}', '{"a": {"b": null, "x": null}}']);
}

// Array keywords.
const arrayCases = [
	"[]", "[1]", '[1, "2"]', "[1, 1]", '[1, "a", true, null]', "[[1], [1]]", '[{"a":1},{"a":1}]', '"5"', "5", "null",
	'[1, 2, 3, 4, 5]', '["x", "y", "z"]', "[0.5, -1, 2]",
];
for (const [name, schema] of Object.entries({
	tuple: { type: "array", prefixItems: [{ type: "integer" }, { type: "string" }], items: false },
	tuple_open: { type: "array", prefixItems: [{ type: "integer" }], items: { type: "boolean" } },
	items_array: { type: "array", items: [{ type: "integer" }, { type: "string" }], additionalItems: { type: "boolean" } },
	counts: { type: "array", minItems: 2, maxItems: 3 },
	unique: { type: "array", uniqueItems: true },
	contains: { type: "array", contains: { type: "string" } },
	contains_bounds: { type: "array", contains: { type: "integer" }, minContains: 2, maxContains: 3 },
	contains_max: { type: "array", contains: { type: "integer" }, minContains: 0, maxContains: 1 },
	contains_two: { type: "array", contains: { type: "string" }, minContains: 2 },
	items_union: { type: "array", items: { anyOf: [{ type: "integer" }, { type: "boolean" }] } },
	unevaluated_items: { type: "array", prefixItems: [{ type: "integer" }], unevaluatedItems: false },
	unevaluated_items_contains: { type: "array", contains: { type: "string" }, unevaluatedItems: { type: "integer" } },
})) {
	add(name, prop("v", schema, { required: true }), arrayCases.map((a) => `{"v": ${a}}`));
}

// Unions of objects: tagged, untagged, nested, through references.
const shapes = {
	type: "object",
	properties: {
		shape: {
			anyOf: [
				{ type: "object", properties: { kind: { const: "circle" }, r: { type: "number" } }, required: ["kind", "r"] },
				{ type: "object", properties: { kind: { const: "square" }, side: { type: "number" } }, required: ["kind", "side"] },
			],
		},
	},
	required: ["shape"],
};
const untagged = {
	type: "object",
	properties: {
		x: {
			oneOf: [
				{ type: "object", properties: { a: { type: "string" }, b: { type: "string" } }, required: ["a"], additionalProperties: false },
				{ type: "object", properties: { c: { type: "number" } }, required: ["c"] },
				{ type: "array", items: { type: "object", properties: { d: { type: "integer" } }, required: ["d"] } },
			],
		},
	},
};
const refs = {
	type: "object",
	$defs: {
		node: {
			type: "object",
			properties: { name: { type: "string" }, children: { type: "array", items: { $ref: "#/$defs/node" } } },
			required: ["name"],
		},
		pos: { type: "integer", minimum: 0 },
	},
	definitions: { legacy: { type: "boolean" } },
	properties: {
		tree: { $ref: "#/$defs/node" },
		n: { $ref: "#/$defs/pos" },
		flag: { $ref: "#/definitions/legacy" },
		missing: { $ref: "#/$defs/nothing" },
		encoded: { $ref: "#/$defs/a%20b" },
		anchored: { $ref: "#here" },
		external: { $ref: "other.json#/x" },
		sibling: { $ref: "#/$defs/pos", maximum: 5 },
	},
};
refs.$defs["a b"] = { type: "string" };
refs.$defs.anchor = { $anchor: "here", type: "number" };
const jsonValue = {
	$defs: {
		json: {
			anyOf: [
				{ type: "string" },
				{ type: "number" },
				{ type: "boolean" },
				{ type: "null" },
				{ type: "array", items: { $ref: "#/$defs/json" } },
				{ type: "object", additionalProperties: { $ref: "#/$defs/json" } },
			],
		},
	},
	type: "object",
	properties: { data: { $ref: "#/$defs/json" }, list: { type: "array", items: { $ref: "#/$defs/int" } } },
	required: ["data"],
};
jsonValue.$defs.int = { type: "integer" };
const ids = {
	$id: "https://example.com/schemas/root.json",
	type: "object",
	properties: {
		a: { $ref: "item.json" },
		b: { $ref: "https://example.com/schemas/item.json#/properties/v" },
		c: { $ref: "#/$defs/item" },
	},
	$defs: { item: { $id: "item.json", type: "object", properties: { v: { type: "integer" } }, required: ["v"] } },
};
const unevaluated = {
	type: "object",
	allOf: [{ properties: { a: { type: "string" } } }, { anyOf: [{ properties: { b: { type: "number" } } }, { properties: { c: { type: "boolean" } } }] }],
	unevaluatedProperties: false,
};
const unevaluatedSchema = {
	type: "object",
	properties: { a: { type: "integer" } },
	if: { properties: { a: { const: 1 } } },
	then: { properties: { b: { type: "string" } } },
	unevaluatedProperties: { type: "number" },
};
const nullable = {
	type: "object",
	properties: {
		a: { anyOf: [{ type: "string" }, { type: "null" }] },
		b: { type: ["array", "null"], items: { type: "number" } },
		c: { oneOf: [{ type: "object", properties: { x: { type: "integer" } } }, { type: "null" }] },
		d: { type: "string", enum: ["x", "y"] },
		e: { type: "array", items: { type: "string", enum: ["p", "q"] } },
	},
};
const unionMembers = {
	type: "object",
	properties: {
		u: {
			anyOf: [{ type: "object", properties: { k: { const: "a" } }, required: ["k"] }, { type: "string" }],
			properties: { n: { type: "number" } },
		},
		w: { allOf: [{ type: "object" }], properties: { n: { type: "integer" } } },
	},
};
const unionCases = [
	'{"shape": {"kind": "circle", "r": 1}}', '{"shape": {"kind": "circle", "r": "2"}}', '{"shape": {"kind": "circle"}}',
	'{"shape": {"kind": "triangle"}}', '{"shape": {"side": 1}}', '{"shape": "circle"}', '{"shape": null}',
	'{"shape": {"kind": "square", "side": true}}', '{"shape": [{"kind": "square", "side": 1}]}', "{}",
	'{"x": {"a": "s"}}', '{"x": {"a": 1}}', '{"x": {"a": "s", "c": 1}}', '{"x": {"c": "1"}}', '{"x": {"q": 1}}',
	'{"x": [{"d": "1"}, {"d": 1.5}]}', '{"x": {"d": 1}}', '{"x": 5}', '{"x": {"a": "s", "b": 2, "z": 1}}',
	'{"tree": {"name": "r", "children": [{"name": "c", "children": [{"name": 1}, {}]}]}}', '{"tree": {"name": 1, "children": {"name": "x"}}}',
	'{"n": "3"}', '{"n": -1}', '{"n": 2.5}', '{"flag": "true"}', '{"flag": 1}', '{"missing": 1}', '{"missing": null}',
	'{"encoded": 1}', '{"anchored": "5"}', '{"anchored": "x"}', '{"external": 1}', '{"sibling": 9}', '{"sibling": "7"}',
	'{"data": {"a": [1, "x", {"b": null}], "c": true}}', '{"data": {"a": [1, {"b": [[{"c": {}}]]}]}}', '{"list": ["1", 2.5, "x"]}',
	'{"a": {"v": "1"}, "b": "2", "c": {}}', '{"a": {"v": 1.5}}', '{"a": 1}',
	'{"a": "s", "b": 1}', '{"a": "s", "c": true}', '{"a": "s", "d": 1}', '{"a": 1, "b": "x", "c": "y"}',
	'{"a": 1, "b": "2", "x": "3"}', '{"a": 2, "b": 5, "x": 1}', '{"a": 1, "z": "n"}',
	'{"a": null, "b": null, "c": null, "d": null, "e": null}', '{"a": 5, "b": "1", "c": {"x": "2"}, "d": "z", "e": "p"}',
	'{"b": ["1", "x"], "e": ["p", "r"]}', '{"c": "null"}', '{"d": 1}',
	'{"u": {"k": "a", "n": "5"}}', '{"u": {"k": "b", "n": "5"}}', '{"u": 5}', '{"w": {"n": "7"}}', '{"w": {"n": "x"}}',
];
for (const [name, schema] of Object.entries({ shapes, untagged, refs, json_value: jsonValue, ids, unevaluated, unevaluated_schema: unevaluatedSchema, nullable, union_members: unionMembers })) {
	add(name, schema, unionCases);
}

// A recursive union the explainer and the coercer must not explore exponentially.
let deep = "1";
for (let i = 0; i < 6; i++) deep = `{"a": [${deep}, "x", {"b": ${deep}}]}`;
let chain = '"y"';
for (let i = 0; i < 30; i++) chain = `{"a": [1, "x", {"b": ${chain}}]}`;
add("json_value", jsonValue, [`{"data": ${deep}}`, `{"data": ${deep.replace(/"x"/g, "{}")}, "list": [{}]}`, `{"data": ${chain}}`]);
const deepStrict = {
	$defs: {
		n: {
			anyOf: [
				{ type: "integer" },
				{ type: "array", items: { $ref: "#/$defs/n" } },
				{ type: "object", additionalProperties: { $ref: "#/$defs/n" } },
			],
		},
	},
	type: "object",
	properties: { v: { $ref: "#/$defs/n" } },
};
add("deep_union", deepStrict, [`{"v": ${deep}}`, `{"v": ${chain}}`, '{"v": [1, [2, ["3", {"a": "x"}]]]}', '{"v": "5"}', '{"v": {"a": {"b": "1.5"}}}']);

// Two branches that recurse into the same children: explained once per child, not per path.
const twin = {
	$defs: {
		t: {
			anyOf: [
				{ type: "object", additionalProperties: { $ref: "#/$defs/t" } },
				{ type: "object", properties: { k: { type: "string" } }, additionalProperties: { $ref: "#/$defs/t" } },
				{ type: "integer" },
			],
		},
	},
	type: "object",
	properties: { v: { $ref: "#/$defs/t" } },
};
let twinChain = '"leaf"';
for (let i = 0; i < 24; i++) twinChain = `{"k": ${i % 2 ? '"s"' : "1"}, "n": ${twinChain}}`;
add("twin_union", twin, [`{"v": ${twinChain}}`, '{"v": {"k": "s", "n": {"m": "2"}}}']);

// Schemas pi-schema refuses to compile, and one that recurses without end.
add("broken_property", { type: "object", properties: { a: "string" } }, ["{}", '{"a": 1}']);
add("broken_items", { type: "object", properties: { a: { type: "array", items: [{ type: "string" }, 5] } } }, ["{}"]);
add("broken_null", { type: "object", properties: { a: null } }, ["{}"]);
add("broken_pattern", { type: "object", properties: { a: { type: "string", pattern: "(" } } }, ['{"a": "x"}']);
add("broken_pattern_class", { type: "object", properties: { a: { type: "string", pattern: "[z-a]" } } }, ['{"a": "x"}']);
add("broken_pattern_key", { type: "object", patternProperties: { "a**": { type: "string" } } }, ['{"a": "x"}']);
add("broken_ref_target", { type: "object", properties: { a: { $ref: "#/required" } }, required: ["a"] }, ['{"a": 1}']);
add("broken_allof", { type: "object", allOf: [{ type: "object" }, 1] }, ["{}"]);
add("broken_unused_defs", { type: "object", $defs: { x: 5 }, properties: { a: { type: "string" } } }, ['{"a": 1}']);
add("broken_if_alone", { type: "object", if: 5 }, ["{}"]);
add("broken_additional", { type: "object", additionalProperties: null }, ["{}"]);
add("self_ref", { $ref: "#" }, ["{}", '{"a": 1}']);
add("root_not_object", { type: "string" }, ["{}", '{"a": 1}']);
add("root_array", { type: "array", items: { type: "object" } }, ["{}", '{"a": 1}']);
add("root_anyof", { anyOf: [{ type: "object", required: ["a"] }, { type: "object", required: ["b"] }] }, ["{}", '{"a": 1}', '{"c": 1}']);

// Patterns: ECMAScript semantics, the `u` flag and the fallback without it.
const patterns = [
	"^[a-z]+$", "^\\d{3}-\\d{4}$", "^\\w+$", "\\s", "^.$", "^.+$", "^[^]+$", "^\\p{L}+$", "^\\P{L}+$", "^\\p{Lu}", "^\\p{N}+$",
	"^\\p{Script=Greek}+$", "^\\-[a-z]$", "^[\\w.-]+@[\\w-]+\\.[a-z]{2,}$", "(?<=\\$)\\d+", "(?<!\\$)\\b\\d+", "^(\\w)\\1$",
	"^(?<c>[ab])\\k<c>$", "^(a|ab)(c|bcd)(d*)$", "^(?:a|b)*?c$", "^a{2,3}$", "^a{2,}$", "^x{,3}$", "a{", "^[\\]]$", "^\\x41\\u0042\\u{43}$",
	"^\\cJ$", "^\\0$", "^[\\b]$", "^\\//$", "^(?=.*\\d)(?=.*[a-z]).{6,}$", "^(?!foo).*$", "^\\S+$", "^\\D\\W$", "$^", "^$", "x$",
	"^[😀-😂]$", "^😀{2}$", "^\\u{1F600}$", "^\\uD83D\\uDE00$", "^[\\uD83D\\uDE00]$", "^\\8$", "^\\1(a)$", "\\k<x>", "^\\q$",
	"^[\\d-z]+$", "^(a*)*$", "^(a+)+b", "(?:)", "|", "^(?:(a)|b)+$", "^([a-c])*\\1$", "^[^\\d\\s]+$", "^\\p{ASCII}+$", "^\\p{Any}$",
	"^\\p{White_Space}$", "^\\p{Ll}+$", "^\\p{Nd}+$", "^[\\p{L}\\p{N}_-]+$", "^\\p{Emoji_Presentation}$", "^\\B.\\B$",
];
const strings = [
	"", "abc", "ABC", "aBc", "123-4567", "12-34567", "a_b", "a b", "x\ny", "\n", "😀", "😀😀", "😁", "é", "É", "αβγ", "$42", "42", "aa",
	"ab", "abcd", "aab", "aaab", "c", "ababc", "aaa", "aaaa", "a{", "]", "ABC", "\n", "\0", "\b", "//", "abc123", "foobar", "xfoo",
	"-a", "1a", "user.name@example.co", "A1", "١٢٣", "٣", " ", "\u00a0", "\t", "x", "8", "1a", "aa", "q", "ba", "a1", "a-", "-",
];
const patternSchema = (p) => ({ type: "object", properties: { s: { type: "string", pattern: p } } });
for (const p of patterns) {
	add("pattern", patternSchema(p), strings.map((s) => ({ s })));
}
add("pattern_props_unicode", { type: "object", patternProperties: { "^\\p{Lu}": { type: "integer" } }, additionalProperties: { type: "string" } }, [
	{ Ab: "1", ab: 1, É: "2", é: 3 },
]);

// Formats, valid and invalid.
const formatValues = {
	date: ["2024-02-29", "2023-02-29", "2024-13-01", "2024-00-10", "2024-1-01", "20240101", "2024-04-31", "2000-02-29", "1900-02-29", "٢٠٢٤-01-01", "2024-01-01\n"],
	time: ["10:00:00Z", "10:00:00z", "10:00:00", "10:00:00.123+01:00", "23:59:60Z", "23:59:60+00:00", "00:59:60+01:00", "24:00:00Z", "10:60:00Z", "10:00:00+24:00", "10:00:00.Z", "1:00:00Z"],
	"date-time": ["2024-01-01T10:00:00Z", "2024-01-01t10:00:00+05:30", "2024-01-01 10:00:00Z", "2024-01-01T10:00:00", "2024-01-01TT10:00:00Z", "2024-02-30T10:00:00Z", "2024-01-01T23:59:60Z"],
	duration: ["P1Y", "P1Y2M3DT4H5M6S", "P1Y2D", "PT1H", "PT1H2S", "P1W", "P1WT1H", "P", "PT", "P1D", "P1M", "PT1M", "PT1S", "1Y", "P1.5Y", "P1YT"],
	email: ["a@b.co", "a.b@example.com", "a..b@example.com", ".a@b.c", "a.@b.c", "\"a b\"@c.d", "\"a\\\"b\"@c.d", "a@[1.2.3.4]", "a@[IPv6:::1]", "a@[ipv6:abc]", "a@-b.c", "a@b-.c", "@b.c", "a@", "A@B.CO", "é@b.c", "a@b_c.d", "a+tag@x.io"],
	hostname: ["example.com", "a", "-a.com", "a-.com", "a--b.com", "ab--c.com", "xn--nxasmq6b.com", "xn--a.com", "xn---b.com", "a.b.", "a..b", "a_b.com", "a".repeat(64), `${"a".repeat(63)}.com`, "é.com", "XN--NXASMQ6B"],
	"idn-hostname": ["example.com", "ëxample.com", "例え.テスト", "a b", "-a", "a\u3002b", "ａｂｃ.com", "xn--nxasmq6b", "\u0300a", "l·l", "a·b", "ש״ב", "\u05d0\u0031"],
	"idn-email": ["a@b.c", "ü@ë.de", "a@b-.c", "a@-b.c", "\"x y\"@b.c", "a@b", "a..b@c.d", "例@例え.テスト"],
	ipv4: ["0.0.0.0", "255.255.255.255", "256.0.0.0", "01.0.0.0", "1.2.3", "1.2.3.4.5", "a.b.c.d", "1.2.3.4 ", "١.٢.٣.٤"],
	ipv6: ["::", "::1", "1::", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "1::2::3", "::ffff:1.2.3.4", "1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6::1.2.3.4", "12345::", "g::", "::1.2.3", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", ":1:2:3:4:5:6:7"],
	uuid: ["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000", "123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400", "g23e4567-e89b-12d3-a456-426614174000"],
	uri: ["https://example.com", "https://example.com/a/b?c=d#e", "urn:isbn:0451450523", "mailto:a@b.c", "/relative", "relative", "http://[::1]:8080/", "http://[v1.x]/", "http://a b", "http://%zz", "http://ex%41mple.com", "http://user:pw@host:80/p", "a:", "1a:b", "http://[::1/", "http://h:x/", "https://example.com/ü", "file:///etc/passwd"],
	"uri-reference": ["", "#frag", "?q", "/a/b", "a/b", "a:b", "//host/x", "a b", "%41", "%4", "x:y:z", "./a:b", "1a:b", "https://e.com"],
	"uri-template": ["/users/{id}", "/x{?a,b*}", "{+path:3}", "{a.b}", "/x{", "{}", "{a b}", "%41{x}", "%4", "{x:0}", "{x:10000}", "a|b", "{/a,b}"],
	url: ["https://example.com", "http://localhost:3000/x", "ftp://a.b", "mailto:x", "http://", "http://a:99999", "http://a:65535/", "not a url", "http://[::1]/", "http://[1::2::3]/", "http://1.2.3.256/", "http://999999999/", "http://0x7f.1/", "foo://", "foo://:1", "http://a b/", "http:/x", "file:///x", "https://münchen.de/", "http://a@/"],
	iri: ["https://example.com/ü", "http://例え.テスト/", "http://a b", "http://x/%zz", "http://[v1.x]/", "rel/path", "http://x/{y}"],
	"iri-reference": ["", "/ü", "http://x", "httpx//bad", "//host", "//", "a b", "x:y", "http:foo", "%G0"],
	"json-pointer": ["", "/", "/a/b", "/a~0b~1c", "/a~2", "a/b", "/~", "//"],
	"json-pointer-uri-fragment": ["#", "#/", "#/a/b", "#/a%20b", "#/a b", "/a", "#/~0", "#/~2", "#/%zz"],
	"relative-json-pointer": ["0", "0#", "1/a", "01", "-1", "0/a~1", "2#", "0/a~3", ""],
	regex: ["^a$", "(", "[z-a]", "\\-", "a{", "(?<x>a)\\k<x>", "\\p{L}", "\\p{Foo}", "a**", "\\1(a)", "(?i:a)", "", "[\\d-z]"],
	"made-up": ["anything"],
};
for (const [format, values] of Object.entries(formatValues)) {
	add(`format_${format}`, { type: "object", properties: { f: { type: "string", format } } }, values.map((f) => ({ f })));
}
add("format_number", { type: "object", properties: { f: { type: "number", format: "date" } } }, [{ f: 1 }, { f: "2" }]);

// ---------------------------------------------------------------------------------------------
// Seeded fuzz: strings from each language's own alphabet, so the hand-written parsers meet the
// near misses a list of examples would not think of.
// ---------------------------------------------------------------------------------------------

function mulberry32(seed) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}
const random = mulberry32(20240601);
function fuzz(alphabet, count, maxLen, seeds = []) {
	const out = [];
	const pieces = Array.isArray(alphabet) ? alphabet : [...alphabet];
	for (let i = 0; i < count; i++) {
		let str = seeds.length > 0 && random() < 0.5 ? seeds[Math.floor(random() * seeds.length)] : "";
		const n = Math.floor(random() * maxLen);
		for (let j = 0; j < n; j++) {
			const piece = pieces[Math.floor(random() * pieces.length)];
			const at = Math.floor(random() * (str.length + 1));
			str = random() < 0.7 ? str + piece : str.slice(0, at) + piece + str.slice(at);
		}
		out.push(str);
	}
	return out;
}
const fuzzFormats = {
	date: ["0123456789-", 120, 12, ["2024-02-29", "1999-12-31"]],
	time: ["0123456789:.+-Zz", 150, 14, ["10:00:00Z", "23:59:60Z", "12:30:00.5+01:00"]],
	"date-time": ["0123456789:-.TtZ+", 150, 16, ["2024-01-01T10:00:00Z"]],
	duration: ["PTYMWDHS0123456789.", 200, 10, ["P1Y2M3DT4H5M6S", "PT1S"]],
	email: [["a", "Z", "0", ".", "@", "-", "_", "+", '"', "\\", " ", "[", "]", ":", "IPv6:", "é", "1.2.3.4", "b.co"], 250, 8, ["a@b.co"]],
	hostname: [["a", "b", "-", ".", "0", "xn--", "é", "_", "A"], 200, 12, ["example.com", "xn--nxasmq6b"]],
	ipv4: ["0123456789.25", 150, 14, ["192.168.0.1"]],
	ipv6: ["0123456789abcdefABCDEFg:.", 300, 18, ["::1", "1:2:3:4:5:6:7:8", "::ffff:1.2.3.4"]],
	uuid: ["0123456789abcdefABCDEFg-", 100, 40, ["123e4567-e89b-12d3-a456-426614174000"]],
	uri: [["a", "Z", "0", ":", "/", "?", "#", "[", "]", "@", "!", "$", "&", "'", "(", ")", "*", "+", ",", ";", "=", "%", "%4", "%41", "-", ".", "_", "~", " ", "::1", "v1.x", "é", "http:", "//"], 300, 10, ["http://a.b/c?d#e", "urn:x:y"]],
	"uri-reference": [["a", ":", "/", "?", "#", "[", "]", "@", "%", "%41", ".", " ", "1", "::1", "//", "http:"], 250, 8, ["//h/p", "a/b"]],
	"uri-template": [["{", "}", "a", "_", ".", ",", "*", ":", "1", "0", "+", "#", "%", "%41", " ", "/", "?", "|", "é"], 200, 10, ["/x{?a,b*}"]],
	url: [["http", "https", "foo", "file", ":", "/", "\\", "a", ".", "@", "[", "]", "::1", "1", "0x", "256", ":80", ":99999", " ", "%", "é", "?", "#"], 250, 9, ["http://a.b/", "foo://x"]],
	iri: [["http://", "a", "é", "/", " ", "%", "%41", "[v1.x]", "{", "<", "?", "#", "urn:"], 120, 8],
	"iri-reference": [["http://", "a", "é", "/", " ", "%", "%41", "//", ":", "\\", "x//"], 120, 8],
	"json-pointer": ["/~01a ", 120, 8],
	"json-pointer-uri-fragment": ["#/~01a%2 :", 120, 8],
	"relative-json-pointer": ["0123#/~a", 120, 8],
	regex: [["a", "(", ")", "[", "]", "{", "}", "*", "+", "?", "\\", "-", "^", "$", "|", ".", "d", "1", "0", "k<a>", "(?<a>", "(?:", "(?=", "(?<=", "\\p{L}", "\\u{41}", "\\x4", "\\c", ",", "2"], 500, 7],
};
for (const [format, [alphabet, count, maxLen, seeds]] of Object.entries(fuzzFormats)) {
	const values = [...new Set(fuzz(alphabet, count, maxLen, seeds))];
	add(`fuzz_${format}`, { type: "object", properties: { f: { type: "string", format } } }, values.map((f) => ({ f })));
}

// Numeric strings and booleans through every primitive type.
const numberish = [...new Set(fuzz(["0", "1", "9", ".", "e", "E", "+", "-", "x", "0x", "0b", "0o", "n", " ", "\u00a0", "Infinity", "a", "_", "true", "null", "f"], 400, 5))];
for (const type of ["number", "integer", "boolean", "null", "string"]) {
	add(`fuzz_coerce_${type}`, prop("v", { type }, { required: true }), numberish.map((v) => ({ v })));
}
add("fuzz_coerce_type_list", prop("v", { type: ["integer", "boolean", "null"] }, { required: true }), numberish.map((v) => ({ v })));

// Patterns assembled from tokens, each against strings from a matching alphabet.
const tokens = ["a", "b", "ab", ".", "\\d", "\\w", "\\s", "[ab]", "[^a]", "(a)", "(?:ab)", "a*", "b+", "a?", "a{1,2}", "(a|b)", "\\1", "(?=a)", "(?!b)", "(?<=a)", "(?<!a)", "\\b", "^", "$", "*?", "+?", "\\-", "-", "[\\w-]", "😀", "\\p{L}"];
const subjects = ["", "a", "b", "ab", "ba", "aab", "abab", "a b", "1", "a1", "-", "😀", "bbb", "aaaa", "x"];
for (const pattern of [...new Set(fuzz(tokens, 200, 5))]) {
	add("fuzz_pattern", patternSchema(pattern), subjects.map((s) => ({ s })));
}

// Regex syntax errors: the message of `new RegExp(source)` once `u` rejected the source too.
const broken = ["(", ")", "[", "]", "{", "}", "*", "+", "?", "\\", "a", "|", "(?", "(?<", "{1}", "{2,1}", "z-a", "\\k<b>", "(?<b>", "\\c", "-", "(?<=", "x{1,", "\\u{", "[\\", "(?<1>"];
for (const pattern of [...new Set(fuzz(broken, 300, 4))]) {
	add("fuzz_pattern_syntax", patternSchema(pattern), [{ s: "a" }]);
}

// Schemas as MCP servers and other generators write them.
const mcp = {
	$schema: "http://json-schema.org/draft-07/schema#",
	type: "object",
	properties: {
		url: { type: "string", format: "uri", description: "URL to fetch" },
		max_length: { type: "integer", exclusiveMinimum: 0, exclusiveMaximum: 1000000, default: 5000 },
		start_index: { type: "integer", minimum: 0, default: 0 },
		raw: { type: "boolean", default: false },
		headers: { type: "object", additionalProperties: { type: "string" } },
		method: { type: "string", enum: ["GET", "POST", "PUT", "DELETE"] },
		tags: { anyOf: [{ type: "array", items: { type: "string" } }, { type: "null" }], default: null },
		when: { type: "string", format: "date-time" },
		owner: { $ref: "#/definitions/person" },
		legacyBound: { type: "number", minimum: 0, exclusiveMinimum: true },
	},
	required: ["url"],
	additionalProperties: false,
	definitions: {
		person: {
			type: "object",
			properties: { name: { type: "string", minLength: 1 }, email: { type: "string", format: "email" }, id: { type: "string", format: "uuid" } },
			required: ["name"],
			additionalProperties: false,
		},
	},
};
add("fetch", mcp, [
	{ url: "https://example.com" },
	{ url: "https://example.com", max_length: "100", start_index: "0", raw: "true", method: "GET" },
	{ url: "not a uri", max_length: 0, start_index: -1, raw: "maybe", method: "get" },
	{ url: "https://x.y", headers: { a: 1, b: true, c: null, d: { e: 1 } } },
	{ url: "https://x.y", tags: "one" },
	{ url: "https://x.y", tags: null },
	{ url: "https://x.y", tags: ["a", 1, null] },
	{ url: "https://x.y", when: "2024-01-01T00:00:00Z", owner: { name: "a", email: "a@b.co", id: "123e4567-e89b-12d3-a456-426614174000" } },
	{ url: "https://x.y", when: "yesterday", owner: { name: "", email: "nope", id: "x", extra: 1 } },
	{ url: "https://x.y", owner: "me" },
	{ url: "https://x.y", owner: null },
	{ url: "https://x.y", legacyBound: -1 },
	{ url: null },
	{ url: ["https://x.y"] },
	{ uri: "https://x.y" },
	{},
]);
const todo = {
	type: "object",
	properties: {
		action: { type: "string", enum: ["add", "list", "done", "remove"] },
		items: {
			type: "array",
			items: {
				type: "object",
				properties: {
					title: { type: "string" },
					priority: { anyOf: [{ const: "low" }, { const: "medium" }, { const: "high" }] },
					due: { type: ["string", "null"], format: "date" },
					estimate: { type: "number", multipleOf: 0.25, minimum: 0 },
					labels: { type: "array", items: { type: "string", pattern: "^[a-z][a-z0-9-]*$" }, uniqueItems: true, maxItems: 3 },
				},
				required: ["title"],
			},
		},
		id: { oneOf: [{ type: "integer" }, { type: "string", pattern: "^#\\d+$" }] },
	},
	required: ["action"],
};
add("todo", todo, [
	{ action: "add", items: [{ title: "x", priority: "high", due: "2024-05-01", estimate: 1.25, labels: ["a", "b-c"] }] },
	{ action: "add", items: { title: "single" } },
	{ action: "add", items: [{ title: 5, priority: "urgent", due: "tomorrow", estimate: 0.3, labels: ["A", "a", "a", "b", "c"] }] },
	{ action: "add", items: [{ title: "x", due: null, estimate: "0.5", labels: "solo" }] },
	{ action: "add", items: [{ title: "x", due: "", estimate: "", labels: [] }] },
	{ action: "done", id: "3" },
	{ action: "done", id: "#3" },
	{ action: "done", id: 3.5 },
	{ action: "done", id: "three" },
	{ action: "Add" },
	{ action: 1 },
	{ items: [] },
]);

// ---------------------------------------------------------------------------------------------

// Schemas are listed once, on the first line; each case names its schema by index.
const schemaIds = new Map();
const schemas = [];
const fullErrorShown = new Set();
const lines = [];
for (const c of cases) {
	const schemaText = JSON.stringify(c.schema);
	let id = schemaIds.get(schemaText);
	if (id === undefined) {
		id = schemas.length;
		schemas.push(c.schema);
		schemaIds.set(schemaText, id);
	}
	const args = JSON.parse(c.args);
	const toolCall = { type: "toolCall", id: "call", name: c.name, arguments: args };
	if (c.argumentsError !== undefined) toolCall.argumentsError = c.argumentsError;
	const record = { n: c.name, s: id, a: c.args };
	if (c.argumentsError !== undefined) record.argumentsError = c.argumentsError;
	try {
		const value = validateToolArguments({ name: c.name, description: "", parameters: c.schema }, toolCall);
		if (JSON.stringify(value) !== JSON.stringify(args)) record.ok = value;
	} catch (error) {
		let text = error instanceof Error ? error.message : String(error);
		// After a schema's first failure, the parts of a validation error that follow from the
		// case itself (its head and the received arguments) are left to the test to rebuild, to
		// keep the file small.
		const head = `Validation failed for tool "${c.name}":\n`;
		const tail = `\n\nReceived arguments:\n${JSON.stringify(args, null, 2)}`;
		if (fullErrorShown.has(id) && text.startsWith(head) && text.endsWith(tail)) {
			record.failures = text.slice(head.length, -tail.length);
		} else {
			record.error = text;
		}
		fullErrorShown.add(id);
	}
	lines.push(JSON.stringify(record));
}
lines.unshift(JSON.stringify({ schemas }));
const out = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "validate_corpus.jsonl");
writeFileSync(out, `${lines.join("\n")}\n`);
console.log(`${cases.length} cases, ${schemas.length} schemas -> ${out}`);
