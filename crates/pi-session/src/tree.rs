//! The session as a tree (`get_tree`): every entry is a node `{entry, children, label?,
//! labelTimestamp?}`; entries whose `parentId` is null, their own id or unknown are roots;
//! children are ordered by entry time, oldest first (stable for equal times).
//!
//! The tree is kept flat (child lists of entry positions) and written to JSON iteratively: a
//! long linear session is a very deep tree, too deep for recursive serialization (or for
//! recursive drops of nested nodes). Pi's own `get_tree` fails on such sessions.

use crate::store::{Label, SessionStore};
use pi_js::json::write_js;
use pi_js::time::parse_iso_ms;
use pi_protocol::session_entry::SessionEntry;
use std::io::Write;

/// A view of the session tree.
#[derive(Debug)]
pub struct SessionTree<'a> {
    store: &'a SessionStore,
    roots: Vec<usize>,
    /// Child lists in one buffer: the children of entry `i` are
    /// `child_list[child_start[i]..child_start[i + 1]]` (no allocation per node).
    child_start: Vec<usize>,
    child_list: Vec<usize>,
}

impl SessionStore {
    /// The session tree.
    pub fn tree(&self) -> SessionTree<'_> {
        let n = self.entries.len();
        let mut roots = Vec::new();
        let parents: Vec<Option<usize>> = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| match e.parent_id() {
                Some(p) if Some(p) != e.id() => self.by_id.parent(i),
                _ => None,
            })
            .collect();
        let mut child_start = vec![0usize; n + 1];
        for p in parents.iter().flatten() {
            child_start[p + 1] += 1;
        }
        for i in 0..n {
            child_start[i + 1] += child_start[i];
        }
        let mut fill = child_start.clone();
        let mut child_list = vec![0usize; child_start[n]];
        for (i, parent) in parents.iter().enumerate() {
            match parent {
                Some(p) => {
                    child_list[fill[*p]] = i;
                    fill[*p] += 1;
                }
                None => roots.push(i),
            }
        }
        let time = |i: &usize| {
            self.entries[*i]
                .timestamp()
                .and_then(parse_iso_ms)
                .unwrap_or(i64::MIN)
        };
        for w in child_start.windows(2).filter(|w| w[1] - w[0] > 1) {
            // Stable: equal times keep file order.
            child_list[w[0]..w[1]].sort_by_key(time);
        }
        SessionTree {
            store: self,
            roots,
            child_start,
            child_list,
        }
    }
}

impl<'a> SessionTree<'a> {
    /// Positions (in file order) of the root entries.
    pub fn roots(&self) -> &[usize] {
        &self.roots
    }

    /// Positions of the children of the entry at `index`, oldest first.
    pub fn children(&self, index: usize) -> &[usize] {
        match (self.child_start.get(index), self.child_start.get(index + 1)) {
            (Some(&a), Some(&b)) => &self.child_list[a..b],
            _ => &[],
        }
    }

    pub fn entry(&self, index: usize) -> &'a SessionEntry {
        &self.store.entries[index]
    }

    /// The label of the entry at `index`.
    pub fn label(&self, index: usize) -> Option<&'a Label> {
        self.entry(index).id().and_then(|id| self.store.label(id))
    }

    /// The tree as JSON: `[node, ...]`, exactly as `JSON.stringify(getTree())` writes it.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        let mut out = Vec::new();
        self.write_json(&mut out)?;
        // Only JSON text was written.
        String::from_utf8(out).map_err(|e| serde::ser::Error::custom(e.to_string()))
    }

    /// Writes the forest as JSON, iteratively: a linear 50,000-entry branch nests that deep,
    /// which a recursive serializer could not survive.
    pub fn write_json<W: Write + ?Sized>(&self, out: &mut W) -> Result<(), serde_json::Error> {
        let mut stack: Vec<(usize, usize)> = Vec::new();
        put(out, b"[")?;
        for (r, &root) in self.roots.iter().enumerate() {
            if r > 0 {
                put(out, b",")?;
            }
            self.open_node(root, out)?;
            stack.push((root, 0));
            while let Some((node, next)) = stack.last_mut() {
                let kids = self.children(*node);
                if let Some(&child) = kids.get(*next) {
                    if *next > 0 {
                        put(out, b",")?;
                    }
                    *next += 1;
                    self.open_node(child, out)?;
                    stack.push((child, 0));
                } else {
                    let done = *node;
                    stack.pop();
                    self.close_node(done, out)?;
                }
            }
        }
        put(out, b"]")
    }

    fn open_node<W: Write + ?Sized>(
        &self,
        index: usize,
        out: &mut W,
    ) -> Result<(), serde_json::Error> {
        put(out, b"{\"entry\":")?;
        write_js(&mut *out, self.entry(index))?;
        put(out, b",\"children\":[")
    }

    fn close_node<W: Write + ?Sized>(
        &self,
        index: usize,
        out: &mut W,
    ) -> Result<(), serde_json::Error> {
        put(out, b"]")?;
        if let Some(l) = self.label(index) {
            put(out, b",\"label\":")?;
            write_js(&mut *out, &l.label)?;
            put(out, b",\"labelTimestamp\":")?;
            write_js(&mut *out, &l.timestamp)?;
        }
        put(out, b"}")
    }
}

fn put<W: Write + ?Sized>(out: &mut W, bytes: &[u8]) -> Result<(), serde_json::Error> {
    out.write_all(bytes).map_err(serde_json::Error::io)
}
