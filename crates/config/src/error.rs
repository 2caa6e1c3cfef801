//! [`ConfigError`] and [`Origin`]: what is wrong with a setting, and where
//! it was written.
//!
//! Every error names the key and its origin (a file's `line:column`, an
//! environment variable, or a map entry). No error carries the value of a
//! secret key ([`crate::is_secret_key`]).

use std::fmt;
use std::path::PathBuf;

/// Where a setting was written.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// A YAML file (or named text), 1-based line and column.
    File {
        /// The file's path or the text's name.
        file: PathBuf,
        /// Line, from 1.
        line: usize,
        /// Column, from 1.
        column: usize,
    },
    /// An environment variable.
    Env {
        /// Its name.
        var: String,
    },
    /// An entry of a string map.
    Map,
    /// Nowhere: a default, or a check across keys.
    Default,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { file, line, column } => {
                write!(f, "{}:{line}:{column}", file.display())
            }
            Origin::Env { var } => write!(f, "environment variable {var}"),
            Origin::Map => f.write_str("the configuration map"),
            Origin::Default => f.write_str("the defaults"),
        }
    }
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read configuration file {}: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The text is not YAML, or not a mapping of settings.
    #[error("{at}: {reason}")]
    Syntax {
        /// Where.
        at: Origin,
        /// What the parser said.
        reason: String,
    },
    /// A key no setting has.
    #[error("unknown configuration key {key} at {at}{}", hint(.suggestion))]
    UnknownKey {
        /// The key, dotted.
        key: String,
        /// Where.
        at: Origin,
        /// A known key that is close, or a hint.
        suggestion: Option<String>,
    },
    /// The same key twice in one file.
    #[error("configuration key {key} at {at} is already set at {first}")]
    Duplicate {
        /// The key.
        key: String,
        /// The second occurrence.
        at: Origin,
        /// The first.
        first: Origin,
    },
    /// A value of the wrong type.
    #[error("configuration key {key} at {at}: expected {expected}, found {found}")]
    WrongType {
        /// The key.
        key: String,
        /// Where.
        at: Origin,
        /// The type the key takes.
        expected: String,
        /// What was written (redacted for secret keys).
        found: String,
    },
    /// A value of the right type outside what the key accepts.
    #[error("configuration key {key} at {at}: {value} is out of range: {reason}")]
    OutOfRange {
        /// The key.
        key: String,
        /// Where.
        at: Origin,
        /// The value (redacted for secret keys).
        value: String,
        /// The accepted range or values.
        reason: String,
    },
    /// A setting that has no effect with the choice another one made.
    #[error("configuration key {key} at {at} has no effect: {reason}")]
    Inapplicable {
        /// The key.
        key: String,
        /// Where.
        at: Origin,
        /// Which choice makes it ineffective.
        reason: String,
    },
    /// A setting the component it is for refuses (for example a librdkafka
    /// property stoatflow sets itself).
    #[error("configuration key {key} is refused: {reason}")]
    Refused {
        /// The key.
        key: String,
        /// Why.
        reason: String,
    },
    /// A setting missing for the choice another one made.
    #[error("configuration key {key} is required: {reason}")]
    Missing {
        /// The key.
        key: String,
        /// Why it is needed.
        reason: String,
    },
}

fn hint(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(s) => format!("; did you mean {s}?"),
        None => String::new(),
    }
}

impl ConfigError {
    /// The key the error is about, if it is about one.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::UnknownKey { key, .. }
            | ConfigError::Duplicate { key, .. }
            | ConfigError::WrongType { key, .. }
            | ConfigError::OutOfRange { key, .. }
            | ConfigError::Inapplicable { key, .. }
            | ConfigError::Refused { key, .. }
            | ConfigError::Missing { key, .. } => Some(key),
            ConfigError::Read { .. } | ConfigError::Syntax { .. } => None,
        }
    }
}
