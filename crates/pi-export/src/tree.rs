//! The shape of the page: the active branch (root to leaf) and, hanging off it, the entries
//! the active branch left behind, cut into linear segments so no branch nests inside another
//! (deep fork chains must not become deeply nested markup).

use pi_protocol::session_entry::SessionEntry;
use std::collections::{HashMap, HashSet};

/// A linear run of entries off the active branch, starting at a child of `fork` (`None`: a
/// separate root) and following first children to a leaf.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub fork: Option<usize>,
    /// Set when the segment forks off another segment rather than off the active branch.
    pub nested: bool,
    pub entries: Vec<usize>,
}

/// Indexes into the entry list: the active path, and for each active-path entry (or the start,
/// `None`) the segments that branch off it, in file order.
#[derive(Debug, Default)]
pub struct Layout {
    pub path: Vec<usize>,
    pub branches: HashMap<Option<usize>, Vec<Segment>>,
}

impl Layout {
    pub fn other_branch_count(&self) -> usize {
        self.branches.values().map(Vec::len).sum()
    }
}

/// Lays out `entries` for `leaf` (`None` or unknown: no active branch, everything is shown as
/// branches from the start).
pub fn layout(entries: &[SessionEntry], leaf: Option<&str>) -> Layout {
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        if let Some(id) = e.id() {
            by_id.insert(id, i);
        }
    }
    let parent_of = |i: usize| -> Option<usize> {
        let parent = *by_id.get(entries[i].parent_id()?)?;
        (parent != i).then_some(parent)
    };
    let mut children: HashMap<Option<usize>, Vec<usize>> = HashMap::new();
    for (i, entry) in entries.iter().enumerate() {
        if entry.id().is_some_and(|id| by_id.get(id) == Some(&i)) {
            children.entry(parent_of(i)).or_default().push(i);
        }
    }

    let mut path = Vec::new();
    let mut seen = HashSet::new();
    let mut cursor = leaf.and_then(|id| by_id.get(id).copied());
    while let Some(i) = cursor {
        if !seen.insert(i) {
            break; // a parent cycle: stop rather than loop
        }
        path.push(i);
        cursor = parent_of(i);
    }
    path.reverse();
    // A cycle leaves the path without a root; its entries are then shown as branches.
    if path.first().is_some_and(|&root| parent_of(root).is_some()) {
        path.clear();
    }

    let on_path: HashSet<usize> = path.iter().copied().collect();
    let mut branches: HashMap<Option<usize>, Vec<Segment>> = HashMap::new();
    let anchors = std::iter::once(None).chain(path.iter().map(|&i| Some(i)));
    let mut placed = on_path.clone();
    for anchor in anchors {
        let starts = children.get(&anchor).map(Vec::as_slice).unwrap_or(&[]);
        let mut stack: Vec<(Option<usize>, usize, bool)> = starts
            .iter()
            .rev()
            .filter(|c| !on_path.contains(c))
            .map(|&c| (anchor, c, false))
            .collect();
        while let Some((fork, start, nested)) = stack.pop() {
            let mut segment = Segment {
                fork,
                nested,
                entries: Vec::new(),
            };
            let mut cursor = Some(start);
            let mut forks = Vec::new();
            while let Some(i) = cursor.filter(|&i| placed.insert(i)) {
                segment.entries.push(i);
                let kids = children.get(&Some(i)).map(Vec::as_slice).unwrap_or(&[]);
                cursor = kids.first().copied();
                forks.extend(kids.iter().skip(1).map(|&k| (Some(i), k, true)));
            }
            // Later forks of this segment come after it, in file order.
            stack.extend(forks.into_iter().rev());
            if !segment.entries.is_empty() {
                branches.entry(anchor).or_default().push(segment);
            }
        }
    }
    // Entries no root reaches (parent cycles, duplicate ids) are still shown, at the start.
    let unreached: Vec<usize> = (0..entries.len()).filter(|i| !placed.contains(i)).collect();
    if !unreached.is_empty() {
        branches.entry(None).or_default().push(Segment {
            fork: None,
            nested: false,
            entries: unreached,
        });
    }
    Layout { path, branches }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entries(pairs: &[(&str, Option<&str>)]) -> Vec<SessionEntry> {
        pairs
            .iter()
            .map(|(id, parent)| {
                let v = json!({"type":"label","id":id,"parentId":parent,"timestamp":"t","targetId":"x"});
                serde_json::from_value(v).unwrap()
            })
            .collect()
    }

    #[test]
    fn active_path_and_segments_at_their_fork_points() {
        // a ─ b ─ c (leaf)
        //  │   └─ d ─ e
        //  │       └─ f
        //  └─ g          and a second root h
        let e = entries(&[
            ("a", None),
            ("b", Some("a")),
            ("c", Some("b")),
            ("d", Some("b")),
            ("e", Some("d")),
            ("f", Some("d")),
            ("g", Some("a")),
            ("h", None),
        ]);
        let l = layout(&e, Some("c"));
        assert_eq!(l.path, [0, 1, 2]);
        assert_eq!(l.other_branch_count(), 4);
        assert_eq!(
            l.branches[&Some(1)],
            [
                Segment {
                    fork: Some(1),
                    nested: false,
                    entries: vec![3, 4]
                },
                Segment {
                    fork: Some(3),
                    nested: true,
                    entries: vec![5]
                },
            ]
        );
        assert_eq!(
            l.branches[&Some(0)],
            [Segment {
                fork: Some(0),
                nested: false,
                entries: vec![6]
            }]
        );
        assert_eq!(
            l.branches[&None],
            [Segment {
                fork: None,
                nested: false,
                entries: vec![7]
            }]
        );
    }

    #[test]
    fn cycles_and_missing_leaves_do_not_hang_or_lose_entries() {
        let e = entries(&[("a", Some("b")), ("b", Some("a")), ("c", None)]);
        let l = layout(&e, Some("a"));
        assert!(l.path.is_empty());
        assert_eq!(
            l.branches[&None],
            [
                Segment {
                    fork: None,
                    nested: false,
                    entries: vec![2]
                },
                Segment {
                    fork: None,
                    nested: false,
                    entries: vec![0, 1]
                },
            ]
        );
        let l = layout(&e, Some("nope"));
        assert!(l.path.is_empty());
        assert_eq!(l.other_branch_count(), 2);
    }
}
