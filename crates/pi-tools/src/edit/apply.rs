//! Matching and applying edits: every `oldText` is found in the original (LF-normalized) text,
//! exactly or, when any edit needs it, in a fuzzy-normalized view; matches must be unique and
//! disjoint; fuzzy changes are widened to whole lines so untouched lines keep their bytes; the
//! result is spliced back into the original so its line endings survive. Offsets are byte
//! offsets (Pi counts UTF-16 units; the texts produced are the same).

use pi_js::trim_end as js_trim_end;
use unicode_normalization::UnicodeNormalization;

/// One edit as the model sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub old_text: String,
    pub new_text: String,
}

/// Replace `match_length` bytes at `match_index` with `new_text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    pub match_index: usize,
    pub match_length: usize,
    pub new_text: String,
}

/// `\r\n` and lone `\r` become `\n`.
pub fn normalize_to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// NFKC, trailing whitespace removed from each line, typographic quotes, dashes and spaces made
/// ASCII.
pub fn normalize_for_fuzzy_match(text: &str) -> String {
    let nfkc: String = text.nfkc().collect();
    let trimmed: Vec<&str> = nfkc.split('\n').map(js_trim_end).collect();
    trimmed
        .join("\n")
        .chars()
        .map(|c| match c {
            '\u{2018}'..='\u{201b}' => '\'',
            '\u{201c}'..='\u{201f}' => '"',
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{a0}' | '\u{2002}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}' => ' ',
            other => other,
        })
        .collect()
}

fn not_found(path: &str, index: usize, total: usize) -> String {
    if total == 1 {
        format!(
            "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
        )
    } else {
        format!(
            "Could not find edits[{index}] in {path}. The oldText must match exactly including all whitespace and newlines."
        )
    }
}

fn duplicate(path: &str, index: usize, total: usize, occurrences: usize) -> String {
    if total == 1 {
        format!(
            "Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
        )
    } else {
        format!(
            "Found {occurrences} occurrences of edits[{index}] in {path}. Each oldText must be unique. Please provide more context to make it unique."
        )
    }
}

fn empty_old_text(path: &str, index: usize, total: usize) -> String {
    if total == 1 {
        format!("oldText must not be empty in {path}.")
    } else {
        format!("edits[{index}].oldText must not be empty in {path}.")
    }
}

fn no_change(path: &str, total: usize) -> String {
    if total == 1 {
        format!(
            "No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
        )
    } else {
        format!("No changes made to {path}. The replacements produced identical content.")
    }
}

/// The edited text and the replacements that produced it from `base`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub base: String,
    pub new_content: String,
    pub replacements: Vec<Replacement>,
}

struct Found {
    index: usize,
    length: usize,
    fuzzy: bool,
}

/// Exact match first, then in fuzzy-normalized space (offsets are then in that space).
fn find_text(content: &str, old_text: &str) -> Option<Found> {
    if let Some(index) = content.find(old_text) {
        return Some(Found {
            index,
            length: old_text.len(),
            fuzzy: false,
        });
    }
    let fuzzy_content = normalize_for_fuzzy_match(content);
    let fuzzy_old = normalize_for_fuzzy_match(old_text);
    fuzzy_content.find(&fuzzy_old).map(|index| Found {
        index,
        length: fuzzy_old.len(),
        fuzzy: true,
    })
}

fn count_occurrences(content: &str, old_text: &str) -> usize {
    let fuzzy_content = normalize_for_fuzzy_match(content);
    let fuzzy_old = normalize_for_fuzzy_match(old_text);
    if fuzzy_old.is_empty() {
        // `"abc".split("")` has one piece per UTF-16 unit.
        return pi_js::utf16_len(&fuzzy_content).saturating_sub(1);
    }
    fuzzy_content.matches(&fuzzy_old).count()
}

/// Applies `edits` to LF-normalized `content`; errors are Pi's texts.
pub fn apply_edits(content: &str, edits: &[Edit], path: &str) -> Result<Applied, String> {
    let edits: Vec<Edit> = edits
        .iter()
        .map(|e| Edit {
            old_text: normalize_to_lf(&e.old_text),
            new_text: normalize_to_lf(&e.new_text),
        })
        .collect();
    let total = edits.len();
    if let Some(i) = edits.iter().position(|e| e.old_text.is_empty()) {
        return Err(empty_old_text(path, i, total));
    }
    let any_fuzzy = edits
        .iter()
        .any(|e| find_text(content, &e.old_text).is_some_and(|f| f.fuzzy));
    let search_base = if any_fuzzy {
        normalize_for_fuzzy_match(content)
    } else {
        content.to_string()
    };
    let mut matched: Vec<(usize, Replacement)> = Vec::with_capacity(total);
    for (i, edit) in edits.iter().enumerate() {
        let found =
            find_text(&search_base, &edit.old_text).ok_or_else(|| not_found(path, i, total))?;
        let occurrences = count_occurrences(&search_base, &edit.old_text);
        if occurrences > 1 {
            return Err(duplicate(path, i, total, occurrences));
        }
        matched.push((
            i,
            Replacement {
                match_index: found.index,
                match_length: found.length,
                new_text: edit.new_text.clone(),
            },
        ));
    }
    matched.sort_by_key(|(_, r)| r.match_index);
    for pair in matched.windows(2) {
        let (prev_i, prev) = &pair[0];
        let (cur_i, cur) = &pair[1];
        if prev.match_index + prev.match_length > cur.match_index {
            return Err(format!(
                "edits[{prev_i}] and edits[{cur_i}] overlap in {path}. Merge them into one edit or target disjoint regions."
            ));
        }
    }
    let sorted: Vec<Replacement> = matched.into_iter().map(|(_, r)| r).collect();
    let replacements = if any_fuzzy {
        widen_to_lines(content, &search_base, &sorted)?
    } else {
        sorted
    };
    let new_content = apply_replacements(content, &replacements, 0);
    if new_content == content {
        return Err(no_change(path, total));
    }
    Ok(Applied {
        base: content.to_string(),
        new_content,
        replacements,
    })
}

/// Spans of lines including their `\n` (no empty span after a final `\n`).
fn line_spans(content: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for line in content.split_inclusive('\n') {
        spans.push((start, start + line.len()));
        start += line.len();
    }
    spans
}

/// Applies sorted, disjoint replacements whose offsets are relative to `offset`.
fn apply_replacements(content: &str, replacements: &[Replacement], offset: usize) -> String {
    let mut out = String::with_capacity(content.len());
    let mut position = 0;
    for r in replacements {
        let start = r.match_index - offset;
        out.push_str(&content[position..start]);
        out.push_str(&r.new_text);
        position = start + r.match_length;
    }
    out.push_str(&content[position..]);
    out
}

/// Turns replacements matched in `base` (a normalized view of `original` with the same lines)
/// into replacements of `original` that rewrite only the touched lines.
fn widen_to_lines(
    original: &str,
    base: &str,
    replacements: &[Replacement],
) -> Result<Vec<Replacement>, String> {
    let original_lines = line_spans(original);
    let base_lines = line_spans(base);
    if original_lines.len() != base_lines.len() {
        return Err(
            "Cannot preserve unchanged lines because the base content has a different line count."
                .into(),
        );
    }
    // (first line, end line exclusive, replacements)
    let mut groups: Vec<(usize, usize, Vec<Replacement>)> = Vec::new();
    for r in replacements {
        let outside = || "Replacement range is outside the base content.".to_string();
        let start_line = base_lines
            .iter()
            .position(|&(s, e)| r.match_index >= s && r.match_index < e)
            .ok_or_else(outside)?;
        let end = r.match_index + r.match_length;
        let mut end_line = start_line;
        while end_line < base_lines.len() && base_lines[end_line].1 < end {
            end_line += 1;
        }
        if end_line >= base_lines.len() {
            return Err(outside());
        }
        match groups.last_mut() {
            Some(group) if start_line < group.1 => {
                group.1 = group.1.max(end_line + 1);
                group.2.push(r.clone());
            }
            _ => groups.push((start_line, end_line + 1, vec![r.clone()])),
        }
    }
    Ok(groups
        .into_iter()
        .map(|(first, end, group)| {
            let group_start = base_lines[first].0;
            let group_end = base_lines[end - 1].1;
            let original_start = original_lines[first].0;
            Replacement {
                match_index: original_start,
                match_length: original_lines[end - 1].1 - original_start,
                new_text: apply_replacements(&base[group_start..group_end], &group, group_start),
            }
        })
        .collect())
}

/// The line ending of the line containing `offset`: its own LF or CRLF, or that of the line
/// before for an unterminated last line. A lone CR counts only in files without any LF.
fn line_ending_at(content: &str, offset: usize) -> &'static str {
    let bytes = content.as_bytes();
    let line_feed = bytes[offset.min(bytes.len())..]
        .iter()
        .position(|&b| b == b'\n')
        .map(|p| p + offset)
        .or_else(|| {
            bytes[..(offset + 1).min(bytes.len())]
                .iter()
                .rposition(|&b| b == b'\n')
        });
    match line_feed {
        None if content.contains('\r') => "\r",
        None => "\n",
        Some(lf) if lf > 0 && bytes[lf - 1] == b'\r' => "\r\n",
        Some(_) => "\n",
    }
}

/// Applies replacements matched in `normalize_to_lf(original)` to `original` itself.
pub fn apply_to_original(original: &str, replacements: &[Replacement]) -> String {
    let crlfs: Vec<usize> = original.match_indices("\r\n").map(|(i, _)| i).collect();
    let mut crlf_before = 0usize;
    let mut to_original = |offset: usize| {
        while crlf_before < crlfs.len() && crlfs[crlf_before] - crlf_before < offset {
            crlf_before += 1;
        }
        offset + crlf_before
    };
    let mut parts = String::with_capacity(original.len());
    let mut ends_with_cr = false;
    let mut push = |out: &mut String, part: &str| {
        if part.is_empty() {
            return;
        }
        // A CR before the seam and an LF after it would merge into one CRLF.
        if ends_with_cr && part.starts_with('\n') {
            out.push('\n');
        }
        out.push_str(part);
        ends_with_cr = part.ends_with('\r');
    };
    let mut position = 0;
    for r in replacements {
        let start = to_original(r.match_index);
        push(&mut parts, &original[position..start]);
        let ending = line_ending_at(original, start);
        if ending == "\n" {
            push(&mut parts, &r.new_text);
        } else {
            push(&mut parts, &r.new_text.replace('\n', ending));
        }
        position = to_original(r.match_index + r.match_length);
    }
    push(&mut parts, &original[position..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str) -> Edit {
        Edit {
            old_text: old.into(),
            new_text: new.into(),
        }
    }

    #[test]
    fn fuzzy_matches_rewrite_only_the_touched_lines() {
        let content = "say “hi” — ok  \nkeep ‘this’\n";
        let applied = apply_edits(content, &[edit("say \"hi\" - ok", "say bye")], "f").unwrap();
        assert_eq!(applied.new_content, "say bye\nkeep ‘this’\n");
    }

    #[test]
    fn errors_use_pis_texts() {
        let e = apply_edits("a a", &[edit("a", "b")], "f.txt").unwrap_err();
        assert_eq!(
            e,
            "Found 2 occurrences of the text in f.txt. The text must be unique. Please provide more context to make it unique."
        );
        let e = apply_edits("abc", &[edit("ab", "x"), edit("bc", "y")], "f").unwrap_err();
        assert_eq!(
            e,
            "edits[0] and edits[1] overlap in f. Merge them into one edit or target disjoint regions."
        );
        let e = apply_edits("abc", &[edit("abc", "abc")], "f").unwrap_err();
        assert!(e.starts_with("No changes made to f. The replacement produced identical content."));
    }

    #[test]
    fn crlf_files_keep_their_line_endings() {
        let original = "one\r\ntwo\r\nthree\r\n";
        let applied = apply_edits(
            &normalize_to_lf(original),
            &[edit("two\nthree", "TWO\nTHREE")],
            "f",
        )
        .unwrap();
        assert_eq!(
            apply_to_original(original, &applied.replacements),
            "one\r\nTWO\r\nTHREE\r\n"
        );
    }
}
