//! JavaScript semantics that Pi's output depends on, in one place.
//!
//! Pi is a Node program: a trimmed string, a sorted model list, an error text or a timestamp is
//! whatever V8 and ICU make of it. Every crate that must reproduce such a result calls this one
//! instead of keeping its own approximation (the copies had drifted). The behaviour is pinned by
//! cases recorded from Node 22 (`tests/fixtures/`).
//!
//! * [`parse`]: `JSON.parse` with V8's exact error messages.
//! * [`json`]: `JSON.stringify` (number formatting, pretty printing).
//! * [`json_str`]: fast string escaping for long texts, byte-identical to `JSON.stringify`.
//! * [`string`]: `trim`/`trimEnd`, the whitespace they remove, UTF-16 `length`.
//! * [`number`]: `Number(x)` and `String(n)`.
//! * [`value`]: truthiness and `String(v)` of JSON values.
//! * [`collate`]: `localeCompare` (ICU root collation, as far as Pi's inputs need it).
//! * [`time`]: `Date.now()`, `toISOString()`, `new Date(iso)`.
//! * [`text_decoder`]: `TextDecoder` across chunk boundaries.

pub mod collate;
pub mod json;
pub mod json_str;
pub mod number;
pub mod parse;
pub mod process_env;
pub mod string;
pub mod text_decoder;
pub mod time;
pub mod value;

pub use collate::{CollationKey, collation_key, locale_compare};
pub use number::{number_to_string, string_to_number};
pub use string::{is_whitespace, trim, trim_end, trim_start, utf16_len};
pub use time::now_ms;
pub use value::{to_number, truthy};
