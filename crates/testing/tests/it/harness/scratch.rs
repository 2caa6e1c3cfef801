//! Scratch state directories for the runs on the persistent engine.
//!
//! On tmpfs when there is one: the engine fsyncs at every store open and
//! every commit, which on a busy disk costs far more than the scenario; and
//! no test here can observe physical durability (a crash the driver
//! simulates, or a killed process, leaves the page cache, and tmpfs, as it
//! was). Never knows what runs in the directory.

/// A fresh scratch directory, on tmpfs when there is one.
///
/// # Errors
/// If no temporary directory can be made at all.
pub fn scratch_dir() -> std::io::Result<tempfile::TempDir> {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::tempdir_in(shm)
    {
        return Ok(dir);
    }
    tempfile::tempdir()
}
