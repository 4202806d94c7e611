//! The session as a tree (`get_tree`): every entry is a node `{entry, children, label?,
//! labelTimestamp?}`; entries whose `parentId` is null, their own id or unknown are roots;
//! children are ordered by entry time, oldest first (stable for equal times).
//!
//! The tree is kept flat (child lists of entry positions) and written to JSON iteratively: a
//! long linear session is a very deep tree, too deep for recursive serialization (or for
//! recursive drops of nested nodes). Pi's own `get_tree` fails on such sessions.

use crate::store::{Label, SessionStore};
use crate::time::parse_iso_ms;
use pi_protocol::json::to_js_string;
use pi_protocol::session_entry::SessionEntry;

/// A view of the session tree.
#[derive(Debug)]
pub struct SessionTree<'a> {
    store: &'a SessionStore,
    roots: Vec<usize>,
    children: Vec<Vec<usize>>,
}

impl SessionStore {
    /// The session tree.
    pub fn tree(&self) -> SessionTree<'_> {
        let n = self.entries.len();
        let mut roots = Vec::new();
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, e) in self.entries.iter().enumerate() {
            let parent = match e.parent_id() {
                Some(p) if Some(p) != e.id() => self.by_id.get(p).copied(),
                _ => None,
            };
            match parent {
                Some(p) => children[p].push(i),
                None => roots.push(i),
            }
        }
        let time = |i: &usize| {
            self.entries[*i]
                .timestamp()
                .and_then(parse_iso_ms)
                .unwrap_or(i64::MIN)
        };
        for list in children.iter_mut().filter(|l| l.len() > 1) {
            list.sort_by_key(time);
        }
        SessionTree {
            store: self,
            roots,
            children,
        }
    }
}

impl<'a> SessionTree<'a> {
    /// Positions (in [`SessionStore::entries`]) of the root nodes, file order.
    pub fn roots(&self) -> &[usize] {
        &self.roots
    }

    /// Positions of the children of the entry at `index`, oldest first.
    pub fn children(&self, index: usize) -> &[usize] {
        self.children.get(index).map_or(&[], Vec::as_slice)
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
        let mut out = String::new();
        self.write_json(&mut out)?;
        Ok(out)
    }

    /// Appends the tree as JSON to `out` (see [`SessionTree::to_json`]).
    pub fn write_json(&self, out: &mut String) -> Result<(), serde_json::Error> {
        // Each frame: a node whose children are being written, and the next child to write.
        let mut stack: Vec<(usize, usize)> = Vec::new();
        out.push('[');
        for (r, &root) in self.roots.iter().enumerate() {
            if r > 0 {
                out.push(',');
            }
            self.open_node(root, out)?;
            stack.push((root, 0));
            while let Some((node, next)) = stack.last_mut() {
                let kids = self.children(*node);
                if let Some(&child) = kids.get(*next) {
                    if *next > 0 {
                        out.push(',');
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
        out.push(']');
        Ok(())
    }

    fn open_node(&self, index: usize, out: &mut String) -> Result<(), serde_json::Error> {
        out.push_str("{\"entry\":");
        out.push_str(&to_js_string(self.entry(index))?);
        out.push_str(",\"children\":[");
        Ok(())
    }

    fn close_node(&self, index: usize, out: &mut String) -> Result<(), serde_json::Error> {
        out.push(']');
        if let Some(l) = self.label(index) {
            out.push_str(",\"label\":");
            out.push_str(&to_js_string(&l.label)?);
            out.push_str(",\"labelTimestamp\":");
            out.push_str(&to_js_string(&l.timestamp)?);
        }
        out.push('}');
        Ok(())
    }
}
