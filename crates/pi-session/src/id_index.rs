//! Entry id → position of the last entry with that id.
//!
//! Entry ids are almost always eight lowercase hex digits; those are kept as `u32` keys, so a
//! 50,000-entry session does not hold a second heap copy of every id (about 3 MB). Any other id
//! (a foreign or hand-edited file) goes to an ordinary string map.

use std::collections::HashMap;

#[derive(Debug, Default, Clone)]
pub(crate) struct IdIndex {
    hex: HashMap<u32, usize>,
    other: HashMap<String, usize>,
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
}
