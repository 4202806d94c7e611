//! Line diffs computed the way the `diff` npm package (v8) computes them, so our display diffs
//! and patches align changes exactly as Pi's do: Myers' algorithm with jsdiff's diagonal pruning
//! and its tie-breaking (prefer the path that is further along in the old text), then unified
//! hunks built from the change list.

/// One run of the diff: unchanged, added or removed lines (each keeps its `\n`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub added: bool,
    pub removed: bool,
    pub lines: Vec<String>,
}

impl Part {
    pub fn is_change(&self) -> bool {
        self.added || self.removed
    }
}

/// Lines with their terminators (jsdiff's line tokenizer on LF text).
pub fn tokenize(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

struct Component {
    count: usize,
    added: bool,
    removed: bool,
    previous: Option<usize>,
}

#[derive(Clone, Copy)]
struct PathHead {
    old_pos: isize,
    last: Option<usize>,
}

struct Search<'a> {
    old: &'a [&'a str],
    new: &'a [&'a str],
    arena: Vec<Component>,
}

impl Search<'_> {
    fn add_to_path(
        &mut self,
        path: PathHead,
        added: bool,
        removed: bool,
        old_inc: isize,
    ) -> PathHead {
        let component = match path.last.map(|i| &self.arena[i]) {
            Some(last) if last.added == added && last.removed == removed => Component {
                count: last.count + 1,
                added,
                removed,
                previous: last.previous,
            },
            _ => Component {
                count: 1,
                added,
                removed,
                previous: path.last,
            },
        };
        self.arena.push(component);
        PathHead {
            old_pos: path.old_pos + old_inc,
            last: Some(self.arena.len() - 1),
        }
    }

    /// Follows the diagonal while lines match; returns the new position.
    fn extract_common(&mut self, path: &mut PathHead, diagonal: isize) -> isize {
        let (old_len, new_len) = (self.old.len() as isize, self.new.len() as isize);
        let mut old_pos = path.old_pos;
        let mut new_pos = old_pos - diagonal;
        let mut common = 0;
        while new_pos + 1 < new_len
            && old_pos + 1 < old_len
            && self.old[(old_pos + 1) as usize] == self.new[(new_pos + 1) as usize]
        {
            new_pos += 1;
            old_pos += 1;
            common += 1;
        }
        if common > 0 {
            self.arena.push(Component {
                count: common,
                added: false,
                removed: false,
                previous: path.last,
            });
            path.last = Some(self.arena.len() - 1);
        }
        path.old_pos = old_pos;
        new_pos
    }

    fn build(&self, last: Option<usize>) -> Vec<Part> {
        let mut chain = Vec::new();
        let mut cursor = last;
        while let Some(i) = cursor {
            chain.push(i);
            cursor = self.arena[i].previous;
        }
        chain.reverse();
        let (mut old_pos, mut new_pos) = (0usize, 0usize);
        chain
            .into_iter()
            .map(|i| {
                let c = &self.arena[i];
                let lines: Vec<String> = if c.removed {
                    let l = &self.old[old_pos..old_pos + c.count];
                    old_pos += c.count;
                    l.iter().map(|s| s.to_string()).collect()
                } else {
                    let l = &self.new[new_pos..new_pos + c.count];
                    new_pos += c.count;
                    if !c.added {
                        old_pos += c.count;
                    }
                    l.iter().map(|s| s.to_string()).collect()
                };
                Part {
                    added: c.added,
                    removed: c.removed,
                    lines,
                }
            })
            .collect()
    }
}

/// `diffLines(old, new)`.
pub fn diff_lines(old_text: &str, new_text: &str) -> Vec<Part> {
    let old = tokenize(old_text);
    let new = tokenize(new_text);
    let mut search = Search {
        old: &old,
        new: &new,
        arena: Vec::new(),
    };
    let (old_len, new_len) = (old.len() as isize, new.len() as isize);
    let max_edit = old_len + new_len;
    let offset = max_edit + 1;
    let mut best: Vec<Option<PathHead>> = vec![None; (2 * max_edit + 3) as usize];
    let mut first = PathHead {
        old_pos: -1,
        last: None,
    };
    let new_pos = search.extract_common(&mut first, 0);
    if first.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
        return search.build(first.last);
    }
    best[offset as usize] = Some(first);
    let (mut min_diag, mut max_diag) = (isize::MIN, isize::MAX);
    let mut edit_len: isize = 1;
    while edit_len <= max_edit {
        let mut diagonal = min_diag.max(-edit_len);
        while diagonal <= max_diag.min(edit_len) {
            let at = |d: isize| (d + offset) as usize;
            let remove_path = best[at(diagonal - 1)];
            let add_path = best[at(diagonal + 1)];
            if remove_path.is_some() {
                best[at(diagonal - 1)] = None;
            }
            let can_add = add_path.is_some_and(|p| {
                let pos = p.old_pos - diagonal;
                0 <= pos && pos < new_len
            });
            let can_remove = remove_path.is_some_and(|p| p.old_pos + 1 < old_len);
            if !can_add && !can_remove {
                best[at(diagonal)] = None;
                diagonal += 2;
                continue;
            }
            // Branch from the path that got further in the old text; prefer removal on ties.
            let use_add = match (remove_path, add_path) {
                _ if !can_remove => true,
                (Some(r), Some(a)) => can_add && r.old_pos < a.old_pos,
                _ => false,
            };
            let Some(chosen) = (if use_add { add_path } else { remove_path }) else {
                diagonal += 2;
                continue;
            };
            let mut base = if use_add {
                search.add_to_path(chosen, true, false, 0)
            } else {
                search.add_to_path(chosen, false, true, 1)
            };
            let new_pos = search.extract_common(&mut base, diagonal);
            if base.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
                return search.build(base.last);
            }
            best[at(diagonal)] = Some(base);
            if base.old_pos + 1 >= old_len {
                max_diag = max_diag.min(diagonal - 1);
            }
            if new_pos + 1 >= new_len {
                min_diag = min_diag.max(diagonal + 1);
            }
            diagonal += 2;
        }
        edit_len += 1;
    }
    // Not reachable: an edit script of length old + new always exists.
    vec![
        Part {
            added: false,
            removed: true,
            lines: old.iter().map(|s| s.to_string()).collect(),
        },
        Part {
            added: true,
            removed: false,
            lines: new.iter().map(|s| s.to_string()).collect(),
        },
    ]
}

/// One unified-diff hunk, line numbers 1-based as jsdiff's `structuredPatch` reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub old_start: usize,
    pub old_lines: usize,
    pub new_start: usize,
    pub new_lines: usize,
    pub lines: Vec<String>,
}

/// jsdiff's `structuredPatch(..., { context })` hunks for two texts.
pub fn structured_hunks(old_text: &str, new_text: &str, context: usize) -> Vec<Hunk> {
    let mut diff = diff_lines(old_text, new_text);
    diff.push(Part {
        added: false,
        removed: false,
        lines: Vec::new(),
    });
    let mut hunks = Vec::new();
    let (mut old_range_start, mut new_range_start) = (0usize, 0usize);
    let mut range: Vec<String> = Vec::new();
    let (mut old_line, mut new_line) = (1usize, 1usize);
    for i in 0..diff.len() {
        let current = &diff[i];
        if current.is_change() {
            if old_range_start == 0 {
                old_range_start = old_line;
                new_range_start = new_line;
                if i > 0 {
                    let prev = &diff[i - 1].lines;
                    let keep = if context > 0 {
                        prev.len().min(context)
                    } else {
                        0
                    };
                    range = prev[prev.len() - keep..]
                        .iter()
                        .map(|l| format!(" {l}"))
                        .collect();
                    old_range_start -= range.len();
                    new_range_start -= range.len();
                }
            }
            let sign = if current.added { '+' } else { '-' };
            range.extend(current.lines.iter().map(|l| format!("{sign}{l}")));
            if current.added {
                new_line += current.lines.len();
            } else {
                old_line += current.lines.len();
            }
        } else {
            let lines = &current.lines;
            if old_range_start != 0 {
                if lines.len() <= context * 2 && i + 2 < diff.len() {
                    range.extend(lines.iter().map(|l| format!(" {l}")));
                } else {
                    let size = lines.len().min(context);
                    range.extend(lines[..size].iter().map(|l| format!(" {l}")));
                    hunks.push(Hunk {
                        old_start: old_range_start,
                        old_lines: old_line - old_range_start + size,
                        new_start: new_range_start,
                        new_lines: new_line - new_range_start + size,
                        lines: std::mem::take(&mut range),
                    });
                    old_range_start = 0;
                    new_range_start = 0;
                }
            }
            old_line += lines.len();
            new_line += lines.len();
        }
    }
    for hunk in &mut hunks {
        let mut out = Vec::with_capacity(hunk.lines.len());
        for line in hunk.lines.drain(..) {
            match line.strip_suffix('\n') {
                Some(stripped) => out.push(stripped.to_string()),
                None => {
                    out.push(line);
                    out.push("\\ No newline at end of file".to_string());
                }
            }
        }
        hunk.lines = out;
    }
    hunks
}

/// jsdiff's `formatPatch` with file headers only.
pub fn format_patch(old_name: &str, new_name: &str, hunks: &[Hunk]) -> String {
    let mut out = vec![format!("--- {old_name}"), format!("+++ {new_name}")];
    for hunk in hunks {
        // Unified diff quirk: an empty side's start is one lower.
        let old_start = if hunk.old_lines == 0 {
            hunk.old_start.saturating_sub(1)
        } else {
            hunk.old_start
        };
        let new_start = if hunk.new_lines == 0 {
            hunk.new_start.saturating_sub(1)
        } else {
            hunk.new_start
        };
        out.push(format!(
            "@@ -{old_start},{} +{new_start},{} @@",
            hunk.old_lines, hunk.new_lines
        ));
        out.extend(hunk.lines.iter().cloned());
    }
    let mut text = out.join("\n");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(parts: &[Part]) -> Vec<String> {
        parts
            .iter()
            .map(|p| {
                let sign = if p.added {
                    "+"
                } else if p.removed {
                    "-"
                } else {
                    " "
                };
                format!("{sign}{}", p.lines.concat().replace('\n', "|"))
            })
            .collect()
    }

    #[test]
    fn diff_prefers_removals_before_additions() {
        let parts = diff_lines("one\ntwo\nthree\n", "one\nTWO\nTHREE\n");
        assert_eq!(summary(&parts), vec![" one|", "-two|three|", "+TWO|THREE|"]);
    }

    #[test]
    fn identical_texts_are_one_unchanged_part() {
        assert_eq!(summary(&diff_lines("a\nb", "a\nb")), vec![" a|b"]);
        assert!(diff_lines("", "").is_empty());
    }

    #[test]
    fn patches_mark_a_missing_final_newline() {
        let hunks = structured_hunks("a\nb", "a\nc", 4);
        assert_eq!(
            format_patch("f", "f", &hunks),
            "--- f\n+++ f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
        );
    }
}
