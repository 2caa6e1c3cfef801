//! [`ConfigError`] and [`Origin`]: what is wrong with a setting, and where
//! it was written.
//!
//! Every error names the key and its origin (a file's `line:column`, an
//! environment variable, or a map entry). No error carries the value of a
//! secret key ([`crate::is_secret_key`]), and none repeats a long key or
//! value whole: it is shortened to its first characters and its length.

use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;

use crate::keys::KafkaStreamsName;

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
    /// The file (or text) is longer than a configuration may be.
    #[error(
        "configuration file {} is larger than the {max} bytes a configuration may have",
        file.display()
    )]
    TooLarge {
        /// The file's path or the text's name.
        file: PathBuf,
        /// The limit, in bytes.
        max: usize,
    },
    /// The file holds no settings at all (nothing, only comments, or an
    /// empty document): most likely the wrong or a truncated file.
    #[error(
        "configuration file {} holds no settings (it is empty or only comments); \
         write application.id: NAME in it to run with every other default",
        file.display()
    )]
    Empty {
        /// The file's path or the text's name.
        file: PathBuf,
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
    #[error("unknown configuration key {} at {at}{}", short(.key), unknown_hint(.key, .suggestion))]
    UnknownKey {
        /// The key, dotted.
        key: String,
        /// Where.
        at: Origin,
        /// A known key that is close, or a hint (our key for one of Kafka
        /// Streams' names, whose message says so).
        suggestion: Option<String>,
    },
    /// A `STOATFLOW_` environment variable that sets no key and is not one
    /// of the project's own ([`crate::PROJECT_ENV_VARS`]).
    #[error(
        "environment variable {} sets no configuration key{}",
        short(.var),
        env_hint(.suggestion)
    )]
    UnknownEnvVar {
        /// The variable.
        var: String,
        /// The variable of a key whose name is close, and the key.
        suggestion: Option<String>,
    },
    /// The same key twice in one file.
    #[error("configuration key {} at {at} is already set at {first}", short(.key))]
    Duplicate {
        /// The key.
        key: String,
        /// The second occurrence.
        at: Origin,
        /// The first.
        first: Origin,
    },
    /// A value of the wrong type.
    #[error(
        "configuration key {} at {at}: expected {expected}, found {}",
        short(.key),
        short(.found)
    )]
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
    /// A value of the right type that the key does not accept: beyond its
    /// bounds, not one of its choices, or an address it may not use.
    #[error(
        "configuration key {} at {at}: {} is not accepted: {reason}",
        short(.key),
        short(.value)
    )]
    OutOfRange {
        /// The key.
        key: String,
        /// Where.
        at: Origin,
        /// The value (redacted for secret keys).
        value: String,
        /// What the key accepts, or why not this value.
        reason: String,
    },
    /// A setting that has no effect with the choice another one made.
    #[error("configuration key {} at {at} has no effect: {reason}", short(.key))]
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
    #[error("configuration key {} is refused: {reason}", short(.key))]
    Refused {
        /// The key.
        key: String,
        /// Why.
        reason: String,
    },
    /// A setting missing for the choice another one made.
    #[error("configuration key {} is required: {reason}", short(.key))]
    Missing {
        /// The key.
        key: String,
        /// Why it is needed.
        reason: String,
    },
}

/// Kafka Streams' name explained ([`crate::KAFKA_STREAMS_NAMES`]), else the
/// did-you-mean.
fn unknown_hint(key: &str, suggestion: &Option<String>) -> String {
    match KafkaStreamsName::of(key) {
        Some(name) => format!(": {}", name.explain()),
        None => hint(suggestion),
    }
}

fn hint(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(s) => format!("; did you mean {s}?"),
        None => String::new(),
    }
}

/// How a variable's name is made, for an unknown variable with no close one.
const NAMING: &str = "each key's variable is STOATFLOW_ and the key upper case, \
                      '.' and '-' as '_'; STOATFLOW_KAFKA_* sets a kafka.* property";

fn env_hint(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(_) => hint(suggestion),
        None => format!(" ({NAMING})"),
    }
}

/// The most characters of a key or value an error message repeats.
const SHOWN_CHARS: usize = 80;

/// `s`, or its first [`SHOWN_CHARS`] characters and its length when longer.
fn short(s: &str) -> Cow<'_, str> {
    match s.char_indices().nth(SHOWN_CHARS) {
        None => Cow::Borrowed(s),
        Some((end, _)) => Cow::Owned(format!("{}… ({} bytes in all)", &s[..end], s.len())),
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
            ConfigError::Read { .. }
            | ConfigError::UnknownEnvVar { .. }
            | ConfigError::TooLarge { .. }
            | ConfigError::Empty { .. }
            | ConfigError::Syntax { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_keys_and_values_are_shortened() {
        assert_eq!(short("abc"), "abc");
        let exact = "x".repeat(SHOWN_CHARS);
        assert_eq!(short(&exact), exact.as_str());
        let long = format!("{}é{}", "k".repeat(SHOWN_CHARS - 1), "v".repeat(5000));
        let e = ConfigError::WrongType {
            key: long.clone(),
            at: Origin::Map,
            expected: "an integer".into(),
            found: format!("{long:?}"),
        };
        let shown = e.to_string();
        assert!(shown.len() < 400, "{shown}");
        let expected_key = format!(
            "{}é… ({} bytes in all)",
            "k".repeat(SHOWN_CHARS - 1),
            long.len()
        );
        assert!(
            shown.starts_with(&format!("configuration key {expected_key} at")),
            "{shown}"
        );
    }
}
