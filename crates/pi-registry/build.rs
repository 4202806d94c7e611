//! Indexes the lines of the embedded model catalog at build time, so startup can slice out the
//! lines it needs without scanning (and paging in) the whole megabyte.

use std::fmt::Write;

fn main() {
    let path = "data/catalog.jsonl";
    println!("cargo:rerun-if-changed={path}");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out =
        String::from("/// Byte ranges of the catalog's lines (without their line ends).\n");
    out.push_str("pub(crate) static CATALOG_LINES: &[(usize, usize)] = &[\n");
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n').trim_end_matches('\r');
        let _ = writeln!(out, "    ({start}, {}),", start + body.len());
        start += line.len();
    }
    out.push_str("];\n");
    let dir = std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into());
    let _ = std::fs::write(format!("{dir}/catalog_lines.rs"), out);
}
