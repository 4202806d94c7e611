// Regenerates tests/fixtures/js_parse_corpus.jsonl: what Node 22's JSON.parse makes of a corpus of
// tricky inputs. The Rust test tests/js_parse.rs replays it against pi_protocol::js_parse, so the
// fixture (not this script) is the source of truth; CI has no Node.
//
//   /path/to/node22/bin/node crates/pi-protocol/tests/js_parse_corpus.mjs
//
// Options for a larger throw-away fuzz run (replayed by setting JS_PARSE_EXTRA_CORPUS=<file> for
// `cargo test -p pi-protocol --test js_parse`): --mutations N (default 700), --seed S, --out FILE.
//
// Each line: {"input": string, "ok": bool, "error"?: message, "value"?: value, "json"?: string,
// "lossy"?: true}. "json" is JSON.stringify(value), which the test compares byte for byte (key
// order, number formatting); "value" is informational (left out beyond 100 levels of nesting). Rust strings cannot hold lone surrogates, so messages and values are passed through
// toWellFormed() (lone surrogate -> U+FFFD, the documented Rust behaviour); "lossy" marks the
// cases where that changed something.

import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

if (!process.versions.node.startsWith("22.")) {
  console.error(`warning: Node ${process.versions.node}; the fixture must come from Node 22 (V8 messages differ between versions)`);
}

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const MUTATIONS = Number(opt("--mutations", "700"));
const SEED = Number(opt("--seed", "1592595" /* 0x184d13 */));

const MAX_DEPTH = 512; // pi_protocol::js_parse::MAX_DEPTH: deeper valid input is out of scope.

const cases = [];
const add = (s) => cases.push(s);

// --- Hand-written cases: every message kind -------------------------------------------------
[
  "", " ", "\t", "\n", "\r\n", "   \n\t ",
  "{", "[", "[1", "[1,", "{\"a\"", "{\"a\":", "{\"a\":1", "{\"a\":1,", "\"", "\"abc", "\"abc\\", "\"abc\\u12",
  "t", "tr", "tru", "f", "fals", "n", "nu", "nul", "-", "1.", "1e", "1e+", "1E-", "-0.", "0e",
  "{this is not json", "xyz", "undefined", "NaN", "Infinity", "-Infinity", "[object Object]",
  " undefined", "undefined ", "\"undefined\"", "null", "true", "false", "0", "-0", "\"\"", "[]", "{}",
  "abcdefghijklmnopqrstuvwxyz", "[1 2]", "{\"a\" 1}", "{\"a\":1 \"b\":2}", "{'a':1}", "{\"a\":1,}", "[1,]",
  "[,1]", "{,}", "{\"a\":}", "[1,,2]", "1 2", "{} x", "\"abc\"def", "{\"a\":1}}", "[1]]", "[1}", "{\"a\":1]",
  "nulx", "truex", "true x", "[tru]", "{\"a\":tru}", "\ufeff{}", "\u00a0{}", "{ x", "{ \n x", "[ , ]",
  "tRue", "t\"", "f-", "tr1", "tr\"", "n-", "fals1e", "tru e", "[tr\"]", "{\"a\":nu1}", "tr.", "t+", "te", "tE",
  "-x", "- 1", "-\"", "-a", "--1", "-+1", "+1", ".5", "0x", "0x10", "01", "-01", "00", "[01]", "[-01]", "0.0.0",
  "1.e5", "1e5.5", "1E+5", "1e-5x", "[1.]", "[1.x]", "[1e]", "[1e+]", "[1e+x]", "[1.5e]", "1.5e-", "1..2",
  "\"ab\\x\"", "\"ab\\u\"", "\"ab\\uxyz\"", "\"ab\\u0\"", "\"ab\\u00\"", "\"ab\\u000\"", "\"ab\\u000x\"",
  "\"ab\\uDEFG\"", "\"ab\\'\"", "\"ab\\/\"", "\"\\b\\f\\n\\r\\t\\\"\\\\\\/\"", "\"ab\\U0041\"", "\"ab\\", "\"ab\\u",
  "\"\\x", "\"\\x\u0001", "\"\u0001\\x", "\"\\ud800\\u12g4\"", "\"\\é\"", "\"\\😀\"", "\"a\\\u0001\"",
  "\"\\u00e9\"", "\"a\u007f\"", "\"a\u0000\"", "\"a\u001f\"", "\"a\u0009\"", "\"a\nb\"", "\"a\rb\"", "\"\u2028\u2029\"",
  "{\"a\":1,\"a\":2}", "{\"a\":1,\"b\":2,\"a\":3}", "{\"__proto__\":1}", "{\"__proto__\":{\"x\":1},\"y\":2}",
  "{\"b\":1,\"2\":2,\"1\":3,\"a\":4,\"4294967295\":5,\"4294967294\":6,\"01\":7,\"-1\":8,\"1.5\":9}",
  "{\"1\":1,\"0\":2,\"00\":3}", "{\"10\":1,\"9\":2,\"1e1\":3,\" 1\":4,\"1 \":5,\"+1\":6}",
  "{\"b\":{\"3\":1,\"c\":2,\"1\":3},\"a\":[{\"2\":1,\"1\":2}]}", "{\"1\":1,\"1\":2,\"0\":3}",
  "{\"\":1,\"\":2}", "{\"a\\u0000b\":1}", "{\"\\u0061\":1,\"a\":2}",
  "{\"a\" : 1 , \"b\" : [ 1 , 2 ] }", "{\"a\"\n:\n1}", "{\"a\":1\n\n,\"b\":x}", "{\"a\":1} // comment",
  "/* c */ 1", "[1,2,3]\u0000", "\u0000", "a\u0000", "\u00a0", "\u00a0".repeat(25),
  "\"\\ud800\"", "\"\\udc00\\ud800x\"", "\"\\ud83d\\ude00\"", "\"\\uD83D\\uDE00\"", "\"\\ud83d\\u0041\"",
  "\"\\ud83d\\ud83d\\ude00\"", "\"\\ude00\\ud83d\"", "\"\\ud800\\u\"", "{\"\\ud800\":1}", "\"\\ud83d\\\"",
  "😀", "[😀]", "\"😀\" x", "\"é\" x", "[\"😀\",x]", "{\"😀\":😀}", "é", "\u2028", "[1,\u2028]",
  "[1,\"\u2028\",1.]", "[1,\"\u2029\",\u2028]", "\"\u2028\" x",
  "{\"a\"\r", "{\"a\"\r\n", "{\"a\"\n\r", "{\"a\"\r\r", "{\n\"a\":1,\n\"b\" 2}", "{\r\n\"a\":1,\r\n\"b\" 2}",
  "{\r\"a\":1,\r\"b\" 2}", "{\n\n\n}\n\nx", "[1,\r\n2,\r\n1.\r\n]", "[1,\r\r2,\n\r1.\r\n]", "1.\r\n", "1.\n",
  "{\"a\"\r\n\t:1,\t\r\n\"b\"\r\n:", "[\n  1,\n  2,\n  😀\n]", "[\n\"😀😀\",\n\"é\" 1]",
  "{\"a\":[1,2}", "{\"a\":{\"b\":1]", "[{\"a\":1]", "{\"a\":1,\"b\":[1,2,{\"c\":x}]}",
  "{\"id\":\"1\",\"type\":\"get_state\"}", "{\"id\":\"1\",\"type\":\"get_state\"", "{\"id\":\"1\",\"type\":\"get_state\"}\n",
  "{\"id\":\"1\",\"type\":\"get_state\"}\r", "{\"id\":\"1\",\"type\":\"get_state\"}x", "{\"id\":\"1\" \"type\":\"get_state\"}",
  "{\"id\":1,\"type\":\"get_state\"}", "{id:\"1\"}", "{\"id\":'1'}", "{\"id\":\"1\",\"type\":get_state}",
  "[true,false,null]", "[true false]", "[null,]", "[[[[[[[]]]]]]]", "[[[[[[[]]]]]]", "[[[[[[[]]]]]]]]",
  "\"\\中\"", "\"\\\u0080\"", "\"\\\u00ff\"", "\"\\\u0100\"", "\"\\\u007f\"", "\"\\ \"", "\"\\0\"",
  "\"\\\ud7ff\"", "\"\\\ue000\"", "\"\\\uffff\"", "\"\\\u2028\"", "\"ab\\😀 cdefghijklmnopqrstuvwxyz\"",
  "[\"\\é\",\"中\"]", "[\"\\中\",\"é\"]", "[\"\\x\",\"中\"]", "[\"a\u0001\",\"中\"]", "\"\\ud800中\"",
  "{\"a\":{\"b\":{\"c\":{}}}}", "{\"a\":{\"b\":{\"c\":{}}}", "\"\\\"\"", "\"\\\\\"", "\"\\\\\\\"", "\"\\\"",
].forEach(add);

// --- Numbers ---------------------------------------------------------------------------------
[
  "12345678901234567890", "-12345678901234567890", "9007199254740991", "9007199254740992", "9007199254740993",
  "-9007199254740993", "18446744073709551615", "18446744073709551616", "99999999999999999999999",
  "123456789012345", "1234567890123456", "-123456789012345", "-1234567890123456",
  "0.30000000000000004", "0.1", "0.7", "1.0", "1.50", "-1.0", "1e0", "1E2", "1e+2", "1e-2", "100e-2", "-0.0", "-0e5",
  "1e21", "1e20", "123456789012345680000", "5e-324", "4.9406564584124654e-324", "2.4703282292062327e-324",
  "2.4703282292062328e-324", "2.2250738585072011e-308", "2.2250738585072012e-308", "1.7976931348623157e308",
  "1.7976931348623158e308", "1.7976931348623159e308", "1e400", "-1e400", "1e-400", "-1e-400", "2.5e-7", "1e-7",
  "0.000001", "123.456e-10", "9.007199254740993e15", "4503599627370496.5", "4503599627370497.5",
  "1.00000000000000011102230246251565404236316680908203125", "1.00000000000000011102230246251565404236316680908203124",
  "0.1000000000000000055511151231257827021181583404541015625", "7.2057594037927933e16", "2e53", "9007199254740992.0",
  "1" + "0".repeat(308), "1" + "0".repeat(309), "0." + "0".repeat(330) + "1", "1".repeat(400),
  "[1e21, 1e20, 123456789012345680000, 5e-324, 2.5e-7, 100]", "{\"n\":-0,\"m\":0e-5,\"k\":-5}",
].forEach(add);

// --- Context snippets: the offending unit at every distance from both ends ------------------
for (let before = 0; before <= 14; before++) {
  for (let after = 0; after <= 14; after++) {
    add("[" + "1,".repeat(before) + "x" + ",1".repeat(after) + "]");
  }
}
for (let before = 0; before <= 13; before++) {
  for (let after = 0; after <= 13; after++) {
    add("[" + " ".repeat(before) + "x" + " ".repeat(after) + "]");
    add("{\"a\":" + "\n".repeat(before) + "}" + "\t".repeat(after));
  }
}
for (let len = 17; len <= 24; len++) {
  add("x".repeat(len));
  add("[" + "x".repeat(len - 1));
  add(" ".repeat(len - 1) + "x");
}
// Surrogate pairs cut by the snippet window, on either side.
for (let shift = 0; shift <= 3; shift++) {
  add("[\"" + "a".repeat(shift) + "😀".repeat(6) + "\", x, \"" + "😀".repeat(6) + "a".repeat(shift) + "\"]");
  add("[\"" + "é".repeat(shift) + "😀😀😀😀😀\",x,\"😀😀😀😀😀" + "é".repeat(shift) + "\"]");
}
add("[" + "😀".repeat(10) + "]");
add("[\"" + "😀".repeat(20) + "\"," + "😀" + "]");
add("\"" + "😀".repeat(10) + "\" x");
add("{\"" + "é".repeat(30) + "\":1,x}");

// --- Positions and line/column after multi-byte characters and line breaks -------------------
const prefixes = ["", "é", "😀", "😀é", "\u2028", "中文", "😀😀😀"];
const breaks = ["\n", "\r", "\r\n", "\n\r", "\n\n", "\r\r\n"];
for (const p of prefixes) {
  add(`{"${p}":1 x}`);
  add(`["${p}", 1.]`);
  add(`"${p}\\q"`);
  add(`"${p}`);
  add(`["${p}"${p}]`);
  for (const br of breaks) {
    add(`{${br}"${p}":${br}1${br}x}`);
    add(`[${br}"${p}${p}",${br}${br}-${br}]`);
    add(`${br}"${p}"${br}${br}"${p}"`);
  }
}

for (const c of ["中", "é", "😀", "Ā", "\u0080", "\uffff"]) {
  for (const t of ["{\"a\":1C}", "{C", "{\"a\":1,C", "[1C]", "1C", "-C", "1.C", "1eC", "1e-C", "\"\\u12C\"",
    "{\"a\"C", "0C", "trC", "[C]", "C", "\"\\C\"", "[\"C\",\"\\x\"]", "[\"C\"\u0001"]) {
    add(t.replaceAll("C", c));
  }
}

// --- Long inputs -------------------------------------------------------------------------------
const long = "Lorem ipsum dolor sit amet, 😀 consectetur adipiscing elit. ".repeat(20);
add(JSON.stringify({ type: "prompt", message: long }));
add(JSON.stringify({ type: "prompt", message: long }).slice(0, -1));
add(JSON.stringify({ type: "prompt", message: long }) + " x");
add(JSON.stringify({ type: "prompt", message: long }).replace("elit.", "elit.\u0001"));
add("[" + JSON.stringify(long) + ",undefined]");
add("{\"a\":" + "[".repeat(MAX_DEPTH - 1) + "]".repeat(MAX_DEPTH - 1) + "}");
add("[".repeat(MAX_DEPTH) + "]".repeat(MAX_DEPTH));
add("[".repeat(900) + "]".repeat(899));
add("[".repeat(900) + "x" + "]".repeat(900));
add("[".repeat(900) + "]".repeat(900) + "]");
add("[".repeat(900) + "{\"a\":1,}" + "]".repeat(900));

// --- Deterministic mutations of valid commands --------------------------------------------------
const commands = [
  { id: "1", type: "get_state" },
  { type: "prompt", message: "Hello 😀 wörld", images: [{ type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }] },
  { id: "req-2", type: "set_model", provider: "anthropic", modelId: "claude-sonnet-4" },
  { type: "set_thinking_level", level: "high" },
  { id: 42, type: "bash", command: "ls -la \"dir\"\n" },
  { type: "compact", customInstructions: "Keep\tit \\ short é" },
  { id: "x", type: "set_auto_compaction", enabled: true },
  { type: "steer", message: "a\u2028b", x: [1, -2.5e3, 0.1, null, false, { "2": 1, "1": 2 }] },
  { type: "follow_up", message: "中文 \u0000 end" },
  { type: "get_messages" },
];
const bases = commands.flatMap((c) => [JSON.stringify(c), JSON.stringify(c, null, 2)]);
bases.push("{\"id\":\"1\",\"type\":\"prompt\",\"message\":\"\\ud83d\\ude00 \\u00e9 \\\"q\\\"\"}");
bases.forEach(add);

let seed = SEED;
function rand() {
  // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (arr) => arr[Math.floor(rand() * arr.length)];
const pool = [
  "\"", "\\", "{", "}", "[", "]", ":", ",", " ", "\n", "\r", "\t", "0", "1", "9", "-", "+", ".", "e", "E", "u",
  "x", "t", "n", "f", "\u0001", "\u0000", "\u001f", "é", "😀", "\u2028", "\ufeff", "'", "/", "null", "true",
  "\\u", "\\ud800", "\\uZZ", "\\x", "01", "1e", "-.", "\"\"", "{}", "[]", "undefined", "中",
];
function mutate(s) {
  let cps = Array.from(s); // by code point, so inputs stay well-formed
  const n = 1 + Math.floor(rand() * 3);
  for (let k = 0; k < n; k++) {
    const i = Math.floor(rand() * (cps.length + 1));
    switch (Math.floor(rand() * 6)) {
      case 0: cps.splice(i, 1); break;
      case 1: cps.splice(i, 0, ...Array.from(pick(pool))); break;
      case 2: cps.splice(i, 1, ...Array.from(pick(pool))); break;
      case 3: cps = cps.slice(0, i); break;
      case 4: {
        const j = i + Math.floor(rand() * 8);
        cps.splice(j, 0, ...cps.slice(i, j));
        break;
      }
      default: {
        const j = Math.floor(rand() * cps.length);
        [cps[i], cps[j]] = [cps[j], cps[i]];
      }
    }
  }
  return cps.join("");
}
for (let k = 0; k < MUTATIONS; k++) add(mutate(pick(bases)));

// --- Random values: numbers that stress rounding, strings with every kind of escape ------------
function randomNumber() {
  const digits = (n) => Array.from({ length: n }, () => Math.floor(rand() * 10)).join("");
  let s = rand() < 0.3 ? "-" : "";
  s += rand() < 0.2 ? "0" : String(1 + Math.floor(rand() * 9)) + digits(Math.floor(rand() * 22));
  if (rand() < 0.5) s += "." + digits(1 + Math.floor(rand() * 20));
  if (rand() < 0.4) s += pick(["e", "E"]) + pick(["", "+", "-"]) + String(Math.floor(rand() * 330));
  return s;
}
function randomString() {
  const parts = ["a", "é", "😀", "中", "\\n", "\\\"", "\\\\", "\\/", "\\u00e9", "\\ud83d\\ude00", "\\ud800",
    "\\uDC00", "\u007f", "\u2028", " "];
  let s = "";
  for (let n = Math.floor(rand() * 6); n > 0; n--) s += pick(parts);
  return '"' + s + '"';
}
function randomValue(d) {
  const r = rand();
  if (d > 3 || r < 0.35) return randomNumber();
  if (r < 0.55) return randomString();
  if (r < 0.65) return pick(["true", "false", "null"]);
  const n = Math.floor(rand() * 4);
  if (r < 0.8) return "[" + Array.from({ length: n }, () => randomValue(d + 1)).join(",") + "]";
  const keys = ["\"a\"", "\"b\"", "\"1\"", "\"0\"", "\"10\"", "\"01\"", "\"4294967295\"", "\"4294967294\"", "\"😀\""];
  return "{" + Array.from({ length: n }, () => pick(keys) + ":" + randomValue(d + 1)).join(",") + "}";
}
for (let k = 0; k < Math.ceil(MUTATIONS / 2); k++) {
  const v = randomValue(0);
  add(v);
  if (k % 3 === 0) add(mutate(v));
}

// --- Run -----------------------------------------------------------------------------------------
function depth(v) {
  if (v === null || typeof v !== "object") return 0;
  let d = 0;
  for (const x of Object.values(v)) d = Math.max(d, depth(x));
  return d + 1;
}
function wellFormed(v) {
  if (typeof v === "string") return v.toWellFormed();
  if (Array.isArray(v)) return v.map(wellFormed);
  if (v !== null && typeof v === "object") {
    // fromEntries defines own properties, so a "__proto__" key stays a key.
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k.toWellFormed(), wellFormed(x)]));
  }
  return v;
}

const seen = new Set();
const lines = [];
let skipped = 0;
for (const input of cases) {
  if (seen.has(input)) continue;
  seen.add(input);
  if (!input.isWellFormed()) throw new Error(`corpus input is not well-formed: ${JSON.stringify(input)}`);
  let rec;
  try {
    const value = JSON.parse(input);
    if (depth(value) > MAX_DEPTH) { skipped++; continue; }
    const json = JSON.stringify(value);
    const fixed = wellFormed(value);
    const fixedJson = JSON.stringify(fixed);
    // serde_json (which reads this file in the Rust test) stops at 128 levels.
    rec = depth(fixed) <= 100 ? { input, ok: true, value: fixed, json: fixedJson } : { input, ok: true, json: fixedJson };
    if (fixedJson !== json) rec.lossy = true;
  } catch (e) {
    if (!(e instanceof SyntaxError)) throw e;
    rec = { input, ok: false, error: e.message.toWellFormed() };
    if (rec.error !== e.message) rec.lossy = true;
  }
  lines.push(JSON.stringify(rec));
}

const out = opt("--out", join(dirname(fileURLToPath(import.meta.url)), "fixtures", "js_parse_corpus.jsonl"));
writeFileSync(out, lines.join("\n") + "\n");
console.log(`wrote ${lines.length} cases to ${out}${skipped ? ` (skipped ${skipped} deeper than ${MAX_DEPTH})` : ""}`);
