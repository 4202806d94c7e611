//! Entry id → position of the last entry with that id, and the position each entry's
//! `parentId` resolves to.
//!
//! Entry ids are almost always eight lowercase hex digits; those are kept as `u32` keys, so a
//! 50,000-entry session does not hold a second heap copy of every id (about 3 MB). Any other id
//! (a foreign or hand-edited file) goes to an ordinary string map.
//!
//! Parent positions are kept resolved: walking a long branch (the context, `get_tree`, forks)
//! is then an array walk rather than a lookup per entry. A parent is what a lookup of its id
//! would give at that moment, so the positions are recomputed in the rare cases an append can
//! change them: an id given again (the later entry wins), or while some `parentId` names no
//! entry (the new one may be it).

use pi_protocol::session_entry::SessionEntry;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Debug, Default, Clone)]
pub(crate) struct IdIndex {
    hex: HashMap<u32, usize, BuildHasherDefault<HexIdHasher>>,
    other: HashMap<String, usize>,
    /// Per entry, the position its `parentId` resolves to ([`NO_PARENT`] for none).
    parents: Vec<u32>,
    /// The `parentId`s that name no entry (usually none).
    dangling: HashSet<String>,
}

const NO_PARENT: u32 = u32::MAX;

/// Hashes a hex id's `u32` with one multiplication. Ids are random (or come from a file, where
/// a collision-seeking attacker gains nothing), so SipHash's protection buys nothing, while
/// every walk up a long branch costs a lookup per entry.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct HexIdHasher(u64);

impl Hasher for HexIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u32(u32::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        // Fibonacci hashing, folded so that the low bits (the bucket) mix all input bits too.
        let h = (self.0 ^ u64::from(n)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }
}

/// The `u32` of an id that is exactly eight lowercase hex digits (so the mapping is one to one).
fn hex_key(id: &str) -> Option<u32> {
    let b = id.as_bytes();
    if b.len() != 8 || !b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    u32::from_str_radix(id, 16).ok()
}

impl IdIndex {
    pub(crate) fn get(&self, id: &str) -> Option<&usize> {
        match hex_key(id) {
            Some(k) => self.hex.get(&k),
            None => self.other.get(id),
        }
    }

    pub(crate) fn contains_key(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// Sets the position of `id`, returning the previous one.
    pub(crate) fn insert(&mut self, id: &str, position: usize) -> Option<usize> {
        match hex_key(id) {
            Some(k) => self.hex.insert(k, position),
            None => self.other.insert(id.to_owned(), position),
        }
    }

    pub(crate) fn remove(&mut self, id: &str) -> Option<usize> {
        match hex_key(id) {
            Some(k) => self.hex.remove(&k),
            None => self.other.remove(id),
        }
    }

    pub(crate) fn clear(&mut self) {
        self.hex.clear();
        self.other.clear();
        self.parents.clear();
        self.dangling.clear();
    }

    /// The position the `parentId` of the entry at `position` resolves to.
    pub(crate) fn parent(&self, position: usize) -> Option<usize> {
        match self.parents.get(position) {
            Some(&p) if p != NO_PARENT => Some(p as usize),
            _ => None,
        }
    }

    fn resolve(&self, entry: &SessionEntry) -> Option<u32> {
        let position = self.get(entry.parent_id()?)?;
        // Positions past u32 would need a 4-billion-entry session.
        u32::try_from(*position).ok().filter(|&p| p != NO_PARENT)
    }

    /// Resolves every entry's parent (after the ids of all `entries` were inserted).
    pub(crate) fn resolve_parents(&mut self, entries: &[SessionEntry]) {
        self.parents.clear();
        self.parents.reserve_exact(entries.len());
        self.dangling.clear();
        for e in entries {
            let p = self.resolve_or_note(e);
            self.parents.push(p);
        }
    }

    fn resolve_or_note(&mut self, entry: &SessionEntry) -> u32 {
        let p = self.resolve(entry);
        if let (None, Some(parent)) = (p, entry.parent_id()) {
            self.dangling.insert(parent.to_owned());
        }
        p.unwrap_or(NO_PARENT)
    }

    /// Indexes the entry just appended at the end of `entries`: its id, its parent, and the
    /// parents it may change.
    pub(crate) fn push(&mut self, entries: &[SessionEntry]) {
        let Some(entry) = entries.last() else {
            return;
        };
        let position = entries.len() - 1;
        let changes_parents = entry
            .id()
            .is_some_and(|id| self.insert(id, position).is_some() || self.dangling.contains(id));
        if changes_parents {
            self.resolve_parents(entries);
            return;
        }
        self.parents.truncate(position);
        let p = self.resolve_or_note(entry);
        self.parents.push(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_other_ids_are_kept_apart() {
        let mut ix = IdIndex::default();
        ix.insert("0000abcd", 1);
        ix.insert("0000ABCD", 2);
        ix.insert("abcd", 3);
        ix.insert("0000abcd0", 4);
        assert_eq!(ix.get("0000abcd"), Some(&1));
        assert_eq!(ix.get("0000ABCD"), Some(&2));
        assert_eq!(ix.get("abcd"), Some(&3));
        assert_eq!(ix.get("0000abcd0"), Some(&4));
        assert_eq!(ix.get("0000abce"), None);
        assert_eq!(ix.insert("0000abcd", 5), Some(1));
        assert_eq!(ix.remove("0000abcd"), Some(5));
        assert!(!ix.contains_key("0000abcd"));
        ix.clear();
        assert!(!ix.contains_key("abcd"));
    }

    fn entry(id: &str, parent: Option<&str>) -> SessionEntry {
        let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
        serde_json::from_str(&format!(
            r#"{{"type":"label","id":"{id}","parentId":{parent},"timestamp":"t","targetId":"x"}}"#
        ))
        .unwrap()
    }

    #[test]
    fn parents_resolve_like_a_lookup_after_every_append() {
        let mut entries = Vec::new();
        let mut ix = IdIndex::default();
        let mut append = |ix: &mut IdIndex, id: &str, parent: Option<&str>| {
            entries.push(entry(id, parent));
            ix.push(&entries);
            let expected: Vec<Option<usize>> = entries
                .iter()
                .map(|e| e.parent_id().and_then(|p| ix.get(p).copied()))
                .collect();
            let got: Vec<Option<usize>> = (0..entries.len()).map(|i| ix.parent(i)).collect();
            assert_eq!(got, expected);
        };
        append(&mut ix, "0000000a", None);
        append(&mut ix, "0000000b", Some("0000000a"));
        // A parent that is not there yet, then arrives.
        append(&mut ix, "0000000c", Some("late"));
        append(&mut ix, "late", Some("0000000b"));
        // An id given again: the later entry is the parent from now on.
        append(&mut ix, "0000000a", Some("late"));
        append(&mut ix, "0000000d", Some("0000000d"));
    }
}
