//! A test body run in a child process whose address space is bounded.
//!
//! Linux overcommits: a decoder that reserves the 4 GiB a `u32::MAX` length
//! field claims, and never touches it, passes in-process. Under a bounded
//! address space that reservation fails, the allocator aborts the child, and
//! the parent test fails. The child is the same test binary running only the
//! one test (`--exact`), told by an environment variable that it is the child.
//!
//! Owns the re-execution and the limit; knows nothing of what the body does.

use std::process::Command;

/// The address space of the child: far above what a decoder of a few
/// kilobytes needs (and the test harness's threads), below any allocation a
/// 32-bit length field can claim.
pub const ADDRESS_SPACE_LIMIT: u64 = 2 << 30;

const CHILD: &str = "STOATFLOW_FUZZ_CHILD";

/// Runs `body` for the test `module::name` in a child process of this test
/// binary whose address space is at most [`ADDRESS_SPACE_LIMIT`] (where the
/// platform cannot bound it, in this process).
///
/// # Panics
/// When the child fails (a panic in `body`, or an abort).
pub fn bounded(module: &str, name: &str, body: impl FnOnce()) {
    if std::env::var_os(CHILD).is_some() || !cfg!(target_os = "linux") {
        limit_address_space();
        body();
        return;
    }
    // libtest names a test by its path inside the crate: drop the crate's name.
    let test = match module.split_once("::") {
        Some((_, inner)) => format!("{inner}::{name}"),
        None => name.to_string(),
    };
    let exe = std::env::current_exe().expect("the test binary's path");
    let status = Command::new(exe)
        .args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .status()
        .expect("run the test binary again");
    assert!(
        status.success(),
        "fuzz target {test} failed in its bounded child process ({status}); see its output above"
    );
}

fn limit_address_space() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let current = getrlimit(Resource::As);
        let limit = current
            .current
            .map_or(ADDRESS_SPACE_LIMIT, |c| c.min(ADDRESS_SPACE_LIMIT));
        setrlimit(
            Resource::As,
            Rlimit {
                current: Some(limit),
                maximum: current.maximum,
            },
        )
        .expect("bound the address space");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bound is real: a reservation past it fails in the child (where
    /// it is set), though the machine could overcommit it.
    #[test]
    fn a_reservation_past_the_limit_fails_in_the_child() {
        bounded(
            module_path!(),
            "a_reservation_past_the_limit_fails_in_the_child",
            || {
                if cfg!(target_os = "linux") {
                    let mut v: Vec<u8> = Vec::new();
                    assert!(v.try_reserve(ADDRESS_SPACE_LIMIT as usize).is_err());
                    assert!(v.try_reserve(1 << 20).is_ok());
                }
            },
        );
    }
}
