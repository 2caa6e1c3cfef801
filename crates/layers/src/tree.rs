//! A crate's module tree, read from its `src/` folder.
//!
//! Owns which files exist, the module path of each, the folders (rooms) and the names each
//! folder's glue re-exports. Knows nothing of references between modules beyond the glue's
//! re-exports (see [`crate::paths`]).

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::paths::{ModPath, references};

/// One source file of the crate.
#[derive(Debug)]
pub struct SourceFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its path relative to `src/`, for reports.
    pub relative: String,
    /// Its module path (`engine/lane.rs` and `engine/lane/mod.rs` are `engine::lane`).
    pub module: ModPath,
    /// Whether it is a folder's glue (`mod.rs`, `lib.rs`, `main.rs`).
    pub glue: bool,
    /// Its text.
    pub text: String,
}

/// The modules of one crate.
#[derive(Debug)]
pub struct ModuleTree {
    /// Every `.rs` file under `src/`.
    pub files: Vec<SourceFile>,
    /// Every folder's module path, the root (`[]`) included.
    pub folders: Vec<ModPath>,
    /// Names re-exported by a glue file (`engine::Shared`) and the module they come from
    /// (`engine::shared`).
    reexports: BTreeMap<ModPath, ModPath>,
}

impl ModuleTree {
    /// Reads every `.rs` file under `src`.
    ///
    /// # Errors
    /// Any I/O error, naming nothing more than [`io::Error`] does; the caller names `src`.
    pub fn read(src: &Path) -> io::Result<Self> {
        let mut files = Vec::new();
        let mut folders = vec![Vec::new()];
        walk(src, src, &mut files, &mut folders)?;
        files.sort_by(|a, b| a.relative.cmp(&b.relative));
        folders.sort();
        let mut reexports = BTreeMap::new();
        for glue in files.iter().filter(|f| f.glue) {
            for (name, from) in glue_reexports(&glue.text, &glue.module) {
                reexports.insert(name, from);
            }
        }
        Ok(Self {
            files,
            folders,
            reexports,
        })
    }

    /// `path` with its longest re-exported prefix replaced by the module it comes from.
    #[must_use]
    pub fn resolve(&self, path: ModPath) -> ModPath {
        for len in (1..=path.len()).rev() {
            if let Some(from) = self.reexports.get(&path[..len]) {
                let mut resolved = from.clone();
                resolved.extend_from_slice(&path[len..]);
                return resolved;
            }
        }
        path
    }

    /// The direct children of `folder`: the next path element of every module below it.
    #[must_use]
    pub fn children(&self, folder: &[String]) -> Vec<String> {
        let mut out: Vec<String> = self
            .files
            .iter()
            .map(|f| &f.module)
            .chain(&self.folders)
            .filter(|m| m.len() > folder.len() && m.starts_with(folder))
            .map(|m| m[folder.len()].clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The glue file of `folder`, if it has one.
    #[must_use]
    pub fn glue(&self, folder: &[String]) -> Option<&SourceFile> {
        self.files.iter().find(|f| f.glue && f.module == folder)
    }
}

fn walk(
    src: &Path,
    dir: &Path,
    files: &mut Vec<SourceFile>,
    folders: &mut Vec<ModPath>,
) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let relative: Vec<String> = path
            .strip_prefix(src)
            .unwrap_or(&path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if path.is_dir() {
            folders.push(relative);
            walk(src, &path, files, folders)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut module = relative.clone();
            let last = module.pop().unwrap_or_default();
            let stem = last.trim_end_matches(".rs");
            let glue = matches!(stem, "mod" | "lib" | "main");
            if !glue {
                module.push(stem.to_string());
            }
            files.push(SourceFile {
                text: fs::read_to_string(&path)?,
                path,
                relative: relative.join("/"),
                module,
                glue,
            });
        }
    }
    Ok(())
}

/// The names a glue file re-exports with `pub use` (any visibility): each leaf name under
/// the glue's module, and the module it comes from.
fn glue_reexports(text: &str, module: &[String]) -> Vec<(ModPath, ModPath)> {
    let mut out = Vec::new();
    for statement in text.split(';') {
        let trimmed = statement.trim_start();
        // Skip attributes and doc lines before the statement.
        let line = trimmed
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("pub"))
            .unwrap_or("");
        let Some(rest) = line
            .strip_prefix("pub")
            .map(|r| r.trim_start())
            .map(|r| {
                if r.starts_with('(') {
                    r.split_once(')').map_or("", |(_, t)| t)
                } else {
                    r
                }
            })
            .map(str::trim_start)
            .and_then(|r| r.strip_prefix("use "))
        else {
            continue;
        };
        let body = rest.trim();
        // A re-export written without a root (`pub use lane::Lane;`) is relative to the glue.
        let rooted = if body.starts_with("crate::")
            || body.starts_with("self::")
            || body.starts_with("super::")
        {
            format!("{body};")
        } else {
            format!("self::{body};")
        };
        for full in references(&rooted, module) {
            if let Some((name, from)) = full.split_last()
                && name != "*"
            {
                let mut exported = module.to_vec();
                exported.push(name.clone());
                out.push((exported, from.to_vec()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::glue_reexports;

    #[test]
    fn a_glue_reexport_stands_for_its_module() {
        let module = vec!["engine".to_string()];
        let got = glue_reexports(
            "//! doc\npub(crate) use shared::{Shared, Fence};\npub use crate::time::Clock;\nmod lane;",
            &module,
        );
        let show: Vec<(String, String)> = got
            .into_iter()
            .map(|(a, b)| (a.join("::"), b.join("::")))
            .collect();
        assert_eq!(
            show,
            [
                ("engine::Shared".to_string(), "engine::shared".to_string()),
                ("engine::Fence".to_string(), "engine::shared".to_string()),
                ("engine::Clock".to_string(), "time".to_string()),
            ]
        );
    }
}
