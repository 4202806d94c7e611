// Regenerates tests/fixtures/js_semantics.jsonl: what Node 22 makes of trim/trimStart/trimEnd,
// String.length, Number(x), String(n), truthiness and localeCompare over a corpus of inputs.
// The Rust test tests/semantics.rs replays every line against pi_js.
//
// Usage (Node >= 22, the reference's):  node crates/pi-js/tests/js_semantics_corpus.mjs
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const lines = [];
const add = (op, input, output) => lines.push(JSON.stringify({ op, input, output }));

// Every code point JavaScript or Rust might call whitespace, alone and around text.
const spaces = [];
for (let c = 0; c <= 0x3000; c++) {
  const ch = String.fromCodePoint(c);
  if (/\s/u.test(ch) || ch.trim() === "" || [0x85, 0x180e, 0x200b, 0x2060].includes(c)) spaces.push(ch);
}
spaces.push("\ufeff", "\u200b", "\u180e", "\u0085");
for (const s of spaces) {
  for (const input of [s, `${s}x${s}`, `${s}${s}a b${s}`]) {
    add("trim", input, input.trim());
    add("trimStart", input, input.trimStart());
    add("trimEnd", input, input.trimEnd());
  }
}
for (const s of ["", "abc", "é", "😀", "a😀é\u{10ffff}", "\u{1F600}\u{1F601}"]) add("length", s, s.length);

const numberInputs = [
  "", " ", "\t\n", "0", "-0", "+0", "12", " 12 ", "1.5", ".5", "5.", "1e3", "1E-3", "1e", "e3", "1e+",
  "0x10", "0X1f", "-0x10", "0b101", "0B2", "0o17", "0o8", "0x", "0b", "0o", "00", "007", "0.0001",
  "Infinity", "-Infinity", "+Infinity", "infinity", "inf", "NaN", "1_000", "12n", "1,5", "١٢",
  "\u00a03\u2028", "\ufeff4", "\u00855", "9007199254740993", "1e309", "-1e309", "4.9e-324", "2e-324",
  "0x1fffffffffffff1", "123456789012345678901234567890", "  -  1", "--1", "+-1", "1 2", "true", "null",
];
for (const s of numberInputs) add("Number", s, String(Number(s)));
const jsonInputs = [null, true, false, 0, 1, -2.5, "", "3", " 7 ", [], ["3"], [" 7 "], [[2]], [true], [null], [1, 2], {}, { a: 1 }, [[]], [""]];
for (const v of jsonInputs) {
  add("NumberOf", v, String(Number(v)));
  add("StringOf", v, String(v));
  add("truthy", v, !!v);
}
const numbers = [0, -0, 1, -1, 0.1, 0.30000000000000004, 1e21, 1e-7, 1.5e-7, 123456789012345680000, 0.000001, 5e-324,
  1.7976931348623157e308, 2 ** 53, 2 ** 53 + 2, 100, 1e20, 0.06];
for (const n of numbers) add("String", n, String(n));

// localeCompare over ids and names Pi sorts: ASCII punctuation, digits, case, Latin accents.
const words = ["a", "A", "b", "B", "ab", "aB", "Ab", "AB", "a b", "a_b", "a-b", "a.b", "a,b", "a;b", "a:b", "a!b",
  "a?b", "a'b", "a\"b", "a(b", "a[b", "a{b", "a@b", "a*b", "a/b", "a\\b", "a&b", "a#b", "a%b", "a`b", "a^b",
  "a+b", "a<b", "a=b", "a>b", "a|b", "a~b", "a$b", "a1", "a10", "a9", "1", "10", "9", "_x", ".x", "-x", "é", "e",
  "E", "è", "ê", "ë", "ä", "ae", "æ", "ß", "ss", "ø", "o", "z", "Z", "gpt-4", "gpt-4o", "gpt-4.1", "claude-3-5",
  "claude-3.5", "x\ty", "x y", "x\ny"];
for (const a of words) for (const b of words) add("localeCompare", [a, b], Math.sign(a.localeCompare(b)));

const out = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "js_semantics.jsonl");
writeFileSync(out, lines.join("\n") + "\n");
console.error(`${lines.length} cases -> ${out}`);
