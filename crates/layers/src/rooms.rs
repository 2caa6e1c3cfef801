//! Loops inside each room (folder) of a crate.
//!
//! Owns the dependency graph between a room's units and the search for its strongly
//! connected sets. Reads the tree through [`ModuleTree`]; knows nothing of how paths are
//! parsed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::path::Path;

use crate::paths::references;
use crate::tree::ModuleTree;

/// A set of units of one room that reach each other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loop {
    /// The room's module path, `.` for the crate root.
    pub room: String,
    /// The units in the loop, sorted.
    pub units: Vec<String>,
    /// Each edge inside the loop with one file that makes it.
    pub edges: Vec<(String, String, String)>,
    /// Whether the room's glue declares its units one vocabulary.
    pub allowed: bool,
}

impl fmt::Display for Loop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.allowed {
            "allowed (its glue declares one vocabulary)"
        } else {
            "loop"
        };
        writeln!(f, "{}: {kind} between {}", self.room, self.units.join(", "))?;
        for (a, b, file) in &self.edges {
            writeln!(f, "    {a} -> {b}   (e.g. in {file})")?;
        }
        Ok(())
    }
}

/// What the check found in one crate.
#[derive(Debug)]
pub struct RoomReport {
    /// How many rooms (folders) the crate has.
    pub rooms: usize,
    /// Every loop, allowed ones included.
    pub loops: Vec<Loop>,
}

impl RoomReport {
    /// The loops no glue allows.
    pub fn forbidden(&self) -> impl Iterator<Item = &Loop> {
        self.loops.iter().filter(|l| !l.allowed)
    }
}

/// Checks every room of the crate whose sources are in `src`.
///
/// # Errors
/// Reading a file failed.
pub fn check_crate(src: &Path) -> io::Result<RoomReport> {
    let tree = ModuleTree::read(src)?;
    let mut loops = Vec::new();
    for room in &tree.folders {
        let units: BTreeSet<String> = tree.children(room).into_iter().collect();
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut example: BTreeMap<(String, String), String> = BTreeMap::new();
        for file in &tree.files {
            if file.module.len() <= room.len() || !file.module.starts_with(room) {
                continue; // outside the room, or its glue
            }
            let from = &file.module[room.len()];
            for path in references(&file.text, &file.module) {
                let path = tree.resolve(path);
                if path.len() <= room.len() || !path.starts_with(room) {
                    continue;
                }
                let to = &path[room.len()];
                if to != from && units.contains(to) {
                    edges.entry(from.clone()).or_default().insert(to.clone());
                    example
                        .entry((from.clone(), to.clone()))
                        .or_insert_with(|| file.relative.clone());
                }
            }
        }
        let allowed = tree
            .glue(room)
            .is_some_and(|g| g.text.contains("one vocabulary"));
        for component in strongly_connected(&units, &edges) {
            let mut inside = Vec::new();
            for a in &component {
                for b in edges.get(a).into_iter().flatten() {
                    if component.contains(b) {
                        let file = example[&(a.clone(), b.clone())].clone();
                        inside.push((a.clone(), b.clone(), file));
                    }
                }
            }
            loops.push(Loop {
                room: if room.is_empty() {
                    ".".to_string()
                } else {
                    room.join("/")
                },
                units: component.into_iter().collect(),
                edges: inside,
                allowed,
            });
        }
    }
    Ok(RoomReport {
        rooms: tree.folders.len(),
        loops,
    })
}

/// The strongly connected sets of more than one node (Tarjan's algorithm, iterative over
/// an explicit stack of (node, next edge) frames).
fn strongly_connected(
    nodes: &BTreeSet<String>,
    edges: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<BTreeSet<String>> {
    let names: Vec<&String> = nodes.iter().collect();
    let id = |n: &String| names.iter().position(|m| *m == n);
    let adjacent: Vec<Vec<usize>> = names
        .iter()
        .map(|n| {
            edges
                .get(*n)
                .into_iter()
                .flatten()
                .filter_map(&id)
                .collect()
        })
        .collect();
    let mut index = vec![usize::MAX; names.len()];
    let mut low = vec![0; names.len()];
    let mut on_stack = vec![false; names.len()];
    let mut stack = Vec::new();
    let mut next = 0;
    let mut out = Vec::new();
    for root in 0..names.len() {
        if index[root] != usize::MAX {
            continue;
        }
        let mut frames = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut edge)) = frames.last_mut() {
            if let Some(&w) = adjacent[v].get(*edge) {
                *edge += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    frames.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(parent, _)) = frames.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = BTreeSet::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.insert(names[w].clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    out.push(component);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::strongly_connected;

    fn graph(edges: &[(&str, &str)]) -> (BTreeSet<String>, BTreeMap<String, BTreeSet<String>>) {
        let mut nodes = BTreeSet::new();
        let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            nodes.insert(a.to_string());
            nodes.insert(b.to_string());
            map.entry(a.to_string()).or_default().insert(b.to_string());
        }
        (nodes, map)
    }

    #[test]
    fn a_chain_has_no_loop_and_a_cycle_is_one() {
        let (n, e) = graph(&[("a", "b"), ("b", "c")]);
        assert!(strongly_connected(&n, &e).is_empty());
        let (n, e) = graph(&[
            ("a", "b"),
            ("b", "c"),
            ("c", "a"),
            ("c", "d"),
            ("d", "e"),
            ("e", "d"),
        ]);
        let got: Vec<Vec<String>> = strongly_connected(&n, &e)
            .into_iter()
            .map(|c| c.into_iter().collect())
            .collect();
        assert_eq!(got.len(), 2);
        assert!(got.contains(&vec!["a".into(), "b".into(), "c".into()]));
        assert!(got.contains(&vec!["d".into(), "e".into()]));
    }
}
