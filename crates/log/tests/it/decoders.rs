//! The recovery path fed arbitrary bytes behind valid checksums: arbitrary
//! transaction-log entries after a valid prefix, and arbitrary batch bodies
//! in a segment. The open fails with an error or opens a log that reads
//! without panicking; it never panics, never loops, never writes outside
//! the data directory. (The decoders themselves are fuzzed beside their
//! code, in the crate's unit tests.)

use proptest::prelude::*;

use stoatflow_log::EmbeddedLog;

use crate::files::{Files, frame, materialize, txlog};
use crate::small_log::{self, build};

fn cases() -> u32 {
    if std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some() {
        2_000
    } else {
        48
    }
}

fn open_and_read(files: &Files) {
    let dir = materialize(files);
    if let Ok(log) = EmbeddedLog::open_with(dir.path(), small_log::config(false)) {
        let _ = small_log::read(&log);
    }
    let outside = dir.path().parent().expect("parent").join("escaped");
    assert!(!outside.exists(), "wrote outside the data directory");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn arbitrary_entries_behind_valid_checksums_never_panic_recovery(
        kind in 1u8..=6,
        body in proptest::collection::vec(any::<u8>(), 0..160),
        in_segment in any::<bool>(),
    ) {
        static BUILT: std::sync::OnceLock<Files> = std::sync::OnceLock::new();
        let mut files = BUILT.get_or_init(|| build(false, 3).files).clone();
        let mut body = body;
        if in_segment {
            let seg = crate::files::segments(&files, "b", 0).pop().expect("segment");
            files.get_mut(&seg).expect("segment").extend(frame(&body));
        } else {
            body.insert(0, kind);
            let t = txlog(&files);
            files.get_mut(&t).expect("txlog").extend(frame(&body));
        }
        open_and_read(&files);
    }
}
