//! A `STOATFLOW_*` environment variable that sets no key is refused by
//! name (with a did-you-mean), except the project's own variables
//! ([`PROJECT_ENV_VARS`]), which every tool and test may have set.

use std::path::Path;

use stoatflow_config::{ConfigError, ConfigLoader, PROJECT_ENV_VARS};

fn build(vars: &[(&str, &str)]) -> Result<stoatflow_config::AppConfig, ConfigError> {
    ConfigLoader::new().env_vars(vars.iter().copied()).build()
}

#[test]
fn a_misspelt_variable_is_refused_naming_it_and_the_close_one() {
    let e = build(&[("STOATFLOW_PROCESSING_LANE", "4")]).unwrap_err();
    assert!(matches!(e, ConfigError::UnknownEnvVar { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "environment variable STOATFLOW_PROCESSING_LANE sets no configuration key; \
         did you mean STOATFLOW_PROCESSING_LANES (stoatflow.processing.lanes)?"
    );
    let e = build(&[("STOATFLOW_WATERMARK_IDLENESS_TIMEOUT", "0")]).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("did you mean STOATFLOW_WATERMARK_IDLENESS_TIMEOUT_MS (stoatflow.watermark.idleness-timeout-ms)?"),
        "{e}"
    );
}

#[test]
fn a_variable_like_no_key_is_refused_without_a_guess() {
    let e = build(&[("STOATFLOW_NOTHING_LIKE_ANY_KEY_AT_ALL", "1")]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "environment variable STOATFLOW_NOTHING_LIKE_ANY_KEY_AT_ALL sets no configuration key \
         (each key's variable is STOATFLOW_ and the key upper case, '.' and '-' as '_'; \
         STOATFLOW_KAFKA_* sets a kafka.* property)"
    );
}

#[test]
fn other_variables_and_known_ones_are_not_refused() {
    let config = build(&[
        ("STOATFLOW_APPLICATION_ID", "vars"),
        ("STOATFLOW_PROCESSING_LANES", "3"),
        ("STOATFLOWISH", "x"),
        ("PATH", "/bin"),
    ])
    .unwrap();
    assert_eq!(config.runtime.lanes, 3);
}

/// Every `STOATFLOW_*` variable the workspace names outside this crate
/// (tests' switches, benchmarks' sizes, child-process roles, and the
/// configuration's own variables in docs and examples) is one the loader
/// accepts: a project variable added without adding it to
/// [`PROJECT_ENV_VARS`] fails here, not in a user's shell.
#[test]
fn no_variable_the_project_uses_is_refused() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut found = std::collections::BTreeSet::new();
    scan(&root, &root.join("crates/config"), &mut found);
    assert!(found.contains("STOATFLOW_HEAVY_TESTS"), "{found:?}");
    for var in &found {
        if let Err(e @ ConfigError::UnknownEnvVar { .. }) = build(&[(var.as_str(), "1")]) {
            panic!("{var}, named in the workspace, is refused: {e}");
        }
    }
    for var in PROJECT_ENV_VARS {
        assert!(found.contains(*var), "{var} is listed but nothing names it");
    }
}

fn scan(dir: &Path, skip: &Path, found: &mut std::collections::BTreeSet<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !(name.starts_with('.') && name != ".ci" || name == "target" || path == skip) {
                scan(&path, skip, found);
            }
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for (i, _) in text.match_indices("STOATFLOW_") {
            let var: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            // `STOATFLOW_KAFKA_*` and the like name a family, not a variable.
            if !var.ends_with('_') {
                found.insert(var);
            }
        }
    }
}
