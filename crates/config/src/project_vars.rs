//! The `STOATFLOW_` environment variables: which set a key, which are the
//! project's own (tests' switches, benchmarks' sizes, child processes'
//! roles) and set none, and the error for any other.
//!
//! The decision: `STOATFLOW_` is the configuration's prefix, so a variable
//! under it that sets no key is refused by name (a misspelt override would
//! otherwise be ignored silently), except those of [`PROJECT_ENV_VARS`],
//! which the repository's tools read for themselves. Owns that list and the
//! refusal; knows no key's meaning, and no tool's use of its variable.

use crate::error::ConfigError;
use crate::keys::{KEYS, closest};
use crate::source::env_name;

/// The prefix every configuration variable has.
pub const ENV_PREFIX: &str = "STOATFLOW_";

/// The project's own `STOATFLOW_` variables, which set no configuration key
/// and are neither refused nor taken as a `STOATFLOW_KAFKA_*` property when
/// the configuration is loaded. A test checks that every `STOATFLOW_`
/// variable the repository names is a key's, a Kafka property's or listed
/// here.
pub const PROJECT_ENV_VARS: &[&str] = &[
    "STOATFLOW_BENCH_MEMORY_CHILD",
    "STOATFLOW_BENCH_N",
    "STOATFLOW_BENCH_ONLY",
    "STOATFLOW_BENCH_RECORDS",
    "STOATFLOW_BENCH_RESTORE_N",
    "STOATFLOW_CRASH_FAMILIES",
    "STOATFLOW_FUZZ_CHILD",
    "STOATFLOW_FUZZ_EXECUTIONS",
    "STOATFLOW_GROUP_KILL_CHILD",
    "STOATFLOW_GROUP_KILL_STATE",
    "STOATFLOW_GROUP_KILL_STOP",
    "STOATFLOW_HEAVY_TESTS",
    "STOATFLOW_KAFKA_BOOTSTRAP",
    "STOATFLOW_KAFKA_KILL_CHILD",
    "STOATFLOW_KILL_CHILD_DIR",
    "STOATFLOW_LOG_OPEN_FILES_CHILD",
    "STOATFLOW_NOIDA_DB",
    "STOATFLOW_RUN_CHILD_DIR",
    "STOATFLOW_SOAK_SECS",
    "STOATFLOW_SWEEP_EVERY_BYTE",
    "STOATFLOW_UPDATE_SCREENSHOT",
];

/// Whether `var` is one of [`PROJECT_ENV_VARS`].
pub(crate) fn is_project_var(var: &str) -> bool {
    PROJECT_ENV_VARS.contains(&var)
}

/// The error for `var`, under [`ENV_PREFIX`], that sets no key and is not
/// the project's: the nearest key's variable if one is close.
pub(crate) fn unknown(var: &str) -> ConfigError {
    let named = KEYS.iter().map(|s| Named {
        name: env_name(s.key),
        key: s.key,
    });
    let suggestion = closest(var, named).map(|n| format!("{} ({})", n.name, n.key));
    ConfigError::UnknownEnvVar {
        var: var.to_owned(),
        suggestion,
    }
}

/// A variable's name and its key, compared by the name.
struct Named {
    name: String,
    key: &'static str,
}

impl AsRef<str> for Named {
    fn as_ref(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::KAFKA_ENV_PREFIX;

    #[test]
    fn no_project_variable_is_a_key_s() {
        for s in KEYS {
            assert!(!is_project_var(&env_name(s.key)), "{}", s.key);
        }
        assert!(PROJECT_ENV_VARS.iter().all(|v| v.starts_with(ENV_PREFIX)));
        assert!(KAFKA_ENV_PREFIX.starts_with(ENV_PREFIX));
    }
}
