//! Where the test broker's binary is, installing it when it is missing, as a
//! container-based harness pulls its image: the broker tests then run on any
//! machine with Python, and fail, naming the command to run, where the
//! install cannot be done. They are never passed without running.
//!
//! Owns the search (`STOATFLOW_NOIDA_DB`, then `PATH`, then Python's user
//! scripts directory, where `pip install --user` puts it) and the one
//! install per test process. Knows nothing of how the broker is started.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The broker's executable name.
pub const BINARY: &str = "noida-db";

/// What installs it, as a user would type it.
pub const INSTALL: &str = "python3 -m pip install --user noida-db";

/// Where to look, read from the environment once.
#[derive(Debug, Clone, Default)]
pub struct Places {
    /// `STOATFLOW_NOIDA_DB`: the binary's path, used as given.
    pub explicit: Option<OsString>,
    /// `PATH`.
    pub path: Option<OsString>,
    /// Python's user scripts directory (`python3 -m site --user-base`, then
    /// `bin`), if Python answers.
    pub user_scripts: Option<PathBuf>,
}

impl Places {
    /// This process's environment.
    pub fn of_this_process() -> Places {
        Places {
            explicit: std::env::var_os("STOATFLOW_NOIDA_DB"),
            path: std::env::var_os("PATH"),
            user_scripts: user_scripts(),
        }
    }

    /// The binary, if one of the places has it: the explicit path whatever
    /// it is (a wrong one fails loudly when spawned), else the first file
    /// named [`BINARY`] on `PATH`, else in the user scripts directory.
    pub fn find(&self) -> Option<PathBuf> {
        if let Some(p) = &self.explicit {
            return Some(PathBuf::from(p));
        }
        let on_path = self
            .path
            .as_ref()
            .into_iter()
            .flat_map(std::env::split_paths);
        on_path
            .chain(self.user_scripts.clone())
            .map(|d| d.join(BINARY))
            .find(|p| p.is_file())
    }
}

/// `python3 -m site --user-base` + `bin`, if Python answers.
fn user_scripts() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args(["-m", "site", "--user-base"])
        .output()
        .ok()?;
    let base = String::from_utf8(out.stdout).ok()?;
    let base = base.trim();
    (out.status.success() && !base.is_empty()).then(|| Path::new(base).join("bin"))
}

/// Runs [`INSTALL`]; `Err` with pip's last lines if it fails.
fn pip_install() -> Result<(), String> {
    eprintln!("{BINARY} not found: installing it with `{INSTALL}`");
    let mut words = INSTALL.split(' ');
    let program = words.next().unwrap_or("python3");
    let out = Command::new(program)
        .args(words)
        .args(["--quiet", "--disable-pip-version-check"])
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
    Err(format!(
        "{} ({})",
        out.status,
        tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
    ))
}

/// The binary: found, or installed by `install` and then found again
/// (`places` re-read after it). `Err` says what failed and the command to
/// run by hand.
pub fn find_or_install(
    places: impl Fn() -> Places,
    install: impl FnOnce() -> Result<(), String>,
) -> Result<PathBuf, String> {
    if let Some(bin) = places().find() {
        return Ok(bin);
    }
    let why = match install() {
        Ok(()) => match places().find() {
            Some(bin) => return Ok(bin),
            None => format!(
                "the install succeeded but {BINARY} is neither on PATH nor in Python's user scripts directory"
            ),
        },
        Err(e) => format!("the install failed: {e}"),
    };
    Err(format!(
        "the broker tests need `{BINARY}` and {why}; run `{INSTALL}` (or put {BINARY} on PATH, \
         or set STOATFLOW_NOIDA_DB to its path), then run the tests again"
    ))
}

/// The binary for this test process: searched, and installed if missing,
/// once.
///
/// # Panics
/// If it is missing and cannot be installed (the message names the command).
pub fn binary() -> PathBuf {
    static BINARY_PATH: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match BINARY_PATH.get_or_init(|| find_or_install(Places::of_this_process, pip_install)) {
        Ok(bin) => bin.clone(),
        Err(e) => panic!("{e}"),
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    /// A directory holding an executable-looking file named [`BINARY`].
    fn dir_with_binary() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(BINARY), "#!/bin/sh\n").unwrap();
        dir
    }

    fn path_of(dirs: &[&Path]) -> Option<OsString> {
        Some(std::env::join_paths(dirs).unwrap())
    }

    #[test]
    fn a_path_without_the_binary_finds_nothing() {
        let empty = tempfile::tempdir().unwrap();
        let places = Places {
            path: path_of(&[empty.path()]),
            ..Places::default()
        };
        assert_eq!(places.find(), None);
    }

    #[test]
    fn the_binary_is_found_on_path_then_in_the_user_scripts() {
        let (empty, a, b) = (
            tempfile::tempdir().unwrap(),
            dir_with_binary(),
            dir_with_binary(),
        );
        let on_path = Places {
            path: path_of(&[empty.path(), a.path()]),
            user_scripts: Some(b.path().to_owned()),
            ..Places::default()
        };
        assert_eq!(on_path.find(), Some(a.path().join(BINARY)));
        let in_user_scripts = Places {
            path: path_of(&[empty.path()]),
            user_scripts: Some(b.path().to_owned()),
            ..Places::default()
        };
        assert_eq!(in_user_scripts.find(), Some(b.path().join(BINARY)));
        let explicit = Places {
            explicit: Some("/elsewhere/broker".into()),
            ..on_path
        };
        assert_eq!(explicit.find(), Some(PathBuf::from("/elsewhere/broker")));
    }

    #[test]
    fn a_missing_binary_is_installed_once_and_then_found() {
        let (empty, installed) = (tempfile::tempdir().unwrap(), dir_with_binary());
        let installs = Cell::new(0);
        let places = || Places {
            path: path_of(&[empty.path()]),
            user_scripts: (installs.get() > 0).then(|| installed.path().to_owned()),
            ..Places::default()
        };
        let found = find_or_install(places, || {
            installs.set(installs.get() + 1);
            Ok(())
        });
        assert_eq!(found, Ok(installed.path().join(BINARY)));
        assert_eq!(installs.get(), 1);
    }

    #[test]
    fn a_present_binary_is_not_installed() {
        let on_path = dir_with_binary();
        let places = || Places {
            path: path_of(&[on_path.path()]),
            ..Places::default()
        };
        let found = find_or_install(places, || panic!("installed although present"));
        assert_eq!(found, Ok(on_path.path().join(BINARY)));
    }

    #[test]
    fn a_failed_install_names_the_command_to_run() {
        let empty = tempfile::tempdir().unwrap();
        let places = || Places {
            path: path_of(&[empty.path()]),
            ..Places::default()
        };
        let e = find_or_install(places, || Err("exit status: 1 (no network)".into())).unwrap_err();
        assert!(
            e.contains("the install failed: exit status: 1 (no network)"),
            "{e}"
        );
        assert!(
            e.contains("run `python3 -m pip install --user noida-db`"),
            "{e}"
        );
        let e = find_or_install(places, || Ok(())).unwrap_err();
        assert!(
            e.contains("the install succeeded but noida-db is neither"),
            "{e}"
        );
        assert!(
            e.contains("run `python3 -m pip install --user noida-db`"),
            "{e}"
        );
    }
}
