//! The layering check run over this repository, and over small made-up crates that show
//! what it catches.

use std::fs;
use std::path::{Path, PathBuf};

use stoatflow_layers::check_crate;

/// Every crate of the workspace: no room (folder) of any of them has an import loop its
/// glue does not declare one vocabulary.
#[test]
fn no_folder_of_any_crate_has_an_import_loop() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut sources: Vec<PathBuf> = fs::read_dir(&crates)
        .expect("read crates/")
        .filter_map(|e| e.ok().map(|e| e.path().join("src")))
        .filter(|src| src.is_dir())
        .collect();
    sources.sort();
    assert!(
        sources.len() >= 10,
        "found only {} crates under {}",
        sources.len(),
        crates.display()
    );
    let mut report = String::new();
    for src in &sources {
        let found = check_crate(src).unwrap_or_else(|e| panic!("reading {}: {e}", src.display()));
        for l in found.forbidden() {
            report.push_str(&format!("{}/{l}", src.display()));
        }
    }
    assert!(report.is_empty(), "import loops inside a folder:\n{report}");
}

fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let at = root.join(path);
        fs::create_dir_all(at.parent().expect("parent")).expect("mkdir");
        fs::write(at, text).expect("write");
    }
}

#[test]
fn a_loop_between_two_files_of_a_folder_is_found_with_the_files_that_make_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    write(
        tmp.path(),
        &[
            ("lib.rs", "mod engine;\nmod time;"),
            ("time.rs", "pub struct Clock;"),
            (
                "engine/mod.rs",
                "mod lane;\nmod commit;\npub(crate) use commit::Barrier;",
            ),
            (
                "engine/lane.rs",
                "use super::Barrier;\nuse crate::time::Clock;",
            ),
            (
                "engine/commit/mod.rs",
                "mod barrier;\npub(crate) use barrier::Barrier;",
            ),
            (
                "engine/commit/barrier.rs",
                "pub struct Barrier(crate::engine::lane::Inbox);",
            ),
        ],
    );
    let report = check_crate(tmp.path()).expect("check");
    let loops: Vec<String> = report.forbidden().map(ToString::to_string).collect();
    assert_eq!(
        loops,
        [
            "engine: loop between commit, lane\n    commit -> lane   (e.g. in engine/commit/barrier.rs)\n    lane -> commit   (e.g. in engine/lane.rs)\n"
        ],
        "the re-exported Barrier stands for engine::commit"
    );
    assert_eq!(report.rooms, 3);
}

#[test]
fn a_declared_vocabulary_and_a_unit_test_reaching_up_are_not_loops() {
    let tmp = tempfile::tempdir().expect("tempdir");
    write(
        tmp.path(),
        &[
            ("lib.rs", "mod dsl;\nmod engine;"),
            (
                "dsl/mod.rs",
                "//! The stream and table types are one vocabulary: each converts to the other.\nmod stream;\nmod table;",
            ),
            ("dsl/stream.rs", "use super::table::Table;"),
            ("dsl/table.rs", "use super::stream::Stream;"),
            ("engine/mod.rs", "mod lane;\nmod commit;"),
            ("engine/lane.rs", "use super::commit::Barrier;"),
            (
                "engine/commit.rs",
                "pub struct Barrier;\n#[cfg(test)]\nmod tests { use super::super::lane::Lane; }",
            ),
        ],
    );
    let report = check_crate(tmp.path()).expect("check");
    assert_eq!(report.forbidden().count(), 0, "{:?}", report.loops);
    assert_eq!(report.loops.len(), 1);
    assert!(report.loops[0].allowed);
}
