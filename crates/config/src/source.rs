//! Where settings come from: a YAML text flattened to dotted keys, a string
//! map, and environment variables ([`env_name`] is the documented mapping).
//!
//! Owns parsing and flattening, with the `line:column` of every key and
//! value. Knows no key's meaning or type: `settings` does.

use std::collections::HashMap;
use std::path::Path;

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::error::{ConfigError, Origin};
use crate::text;

/// A written value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Raw {
    /// A scalar (YAML plain or quoted, a map or environment value).
    Scalar(String),
    /// A YAML null (`~`, `null`, or nothing after the colon).
    Null,
    /// A YAML sequence, which no key takes.
    Sequence,
}

/// One setting as written.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub key: String,
    pub value: Raw,
    /// Where the key was written.
    pub key_at: Origin,
    /// Where the value was written.
    pub value_at: Origin,
}

/// The deepest nesting of mappings and sequences accepted. Keys nest a few
/// levels (`stoatflow:` / `watermark:` / a key); anything near this is not a
/// configuration.
pub const MAX_NESTING_DEPTH: usize = 32;

/// Reads and flattens a YAML text (`name` is its file, for positions).
///
/// The parser's events are pulled one at a time (its event iterator is a
/// state machine; its `load` recurses once per nesting level and can
/// exhaust the stack), so nesting is counted here and refused past
/// [`MAX_NESTING_DEPTH`] before anything deeper is read.
pub(crate) fn yaml(name: &Path, text: &str) -> Result<Vec<Entry>, ConfigError> {
    let text = text::checked(name, text)?;
    let mut flat = Flatten {
        name,
        stack: Vec::new(),
        entries: Vec::new(),
        seen: HashMap::new(),
        error: None,
        root_mapping: false,
    };
    let mut parser = Parser::new_from_str(text);
    let mut depth = 0usize;
    let mut documents = 0usize;
    loop {
        let (ev, mark) = parser.next_token().map_err(|e| ConfigError::Syntax {
            at: flat.origin(*e.marker()),
            reason: e.info().to_owned(),
        })?;
        match ev {
            Event::StreamEnd => break,
            Event::DocumentStart => {
                documents += 1;
                if documents > 1 {
                    return Err(ConfigError::Syntax {
                        at: flat.origin(mark),
                        reason: "a second YAML document; the configuration must be one document"
                            .into(),
                    });
                }
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                depth += 1;
                if depth > MAX_NESTING_DEPTH {
                    return Err(ConfigError::Syntax {
                        at: flat.origin(mark),
                        reason: format!(
                            "nested deeper than {MAX_NESTING_DEPTH} levels; a configuration needs a few"
                        ),
                    });
                }
            }
            Event::MappingEnd | Event::SequenceEnd => depth = depth.saturating_sub(1),
            _ => {}
        }
        flat.on_event(ev, mark);
        if let Some(e) = flat.error.take() {
            return Err(e);
        }
    }
    if !flat.root_mapping {
        return Err(ConfigError::Empty {
            file: name.to_owned(),
        });
    }
    Ok(flat.entries)
}

/// The environment variable that overrides `key`: `STOATFLOW_` then the key
/// without a leading `stoatflow.`, upper case, `.` and `-` as `_`.
/// `stoatflow.watermark.max-out-of-orderness-ms` is
/// `STOATFLOW_WATERMARK_MAX_OUT_OF_ORDERNESS_MS`; `processing.guarantee` is
/// `STOATFLOW_PROCESSING_GUARANTEE`.
pub fn env_name(key: &str) -> String {
    let rest = key.strip_prefix("stoatflow.").unwrap_or(key);
    let mut out = String::from("STOATFLOW_");
    out.extend(rest.chars().map(|c| match c {
        '.' | '-' => '_',
        c => c.to_ascii_uppercase(),
    }));
    out
}

/// The prefix of environment variables that set a pass-through Kafka client
/// property: `STOATFLOW_KAFKA_SASL_PASSWORD` sets `kafka.sasl.password`.
pub const KAFKA_ENV_PREFIX: &str = "STOATFLOW_KAFKA_";

/// The pass-through key an environment variable under [`KAFKA_ENV_PREFIX`]
/// sets (lower case, `_` as `.`).
pub(crate) fn kafka_key_of_env(var: &str) -> Option<String> {
    let rest = var.strip_prefix(KAFKA_ENV_PREFIX)?;
    (!rest.is_empty()).then(|| format!("kafka.{}", rest.to_ascii_lowercase().replace('_', ".")))
}

enum Frame {
    /// A mapping whose keys are prefixed; `key` is the key awaiting its value.
    Mapping {
        prefix: String,
        key: Option<(String, Marker)>,
    },
    /// Inside a value no key takes (a sequence, or a mapping in one): skipped.
    Skip,
}

struct Flatten<'a> {
    name: &'a Path,
    stack: Vec<Frame>,
    entries: Vec<Entry>,
    /// Where each key (a leaf or a mapping) was first written.
    seen: HashMap<String, Origin>,
    error: Option<ConfigError>,
    /// Whether the document is a mapping (else it holds no settings).
    root_mapping: bool,
}

impl Flatten<'_> {
    fn origin(&self, m: Marker) -> Origin {
        Origin::File {
            file: self.name.to_owned(),
            line: m.line(),
            column: m.col() + 1,
        }
    }

    fn fail(&mut self, e: ConfigError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// Takes the pending key of the innermost mapping, as a full dotted key.
    fn take_key(&mut self) -> Option<(String, Marker)> {
        match self.stack.last_mut() {
            Some(Frame::Mapping { prefix, key }) => {
                key.take().map(|(k, m)| (format!("{prefix}{k}"), m))
            }
            _ => None,
        }
    }

    /// Records where `key` is written; false (and the error) if it already was.
    fn first_time(&mut self, key: &str, key_at: &Origin) -> bool {
        if let Some(first) = self.seen.get(key) {
            let first = first.clone();
            self.fail(ConfigError::Duplicate {
                key: key.to_owned(),
                at: key_at.clone(),
                first,
            });
            return false;
        }
        self.seen.insert(key.to_owned(), key_at.clone());
        true
    }

    fn push_entry(&mut self, key: String, key_mark: Marker, value: Raw, value_mark: Marker) {
        let key_at = self.origin(key_mark);
        if !self.first_time(&key, &key_at) {
            return;
        }
        let value_at = self.origin(value_mark);
        self.entries.push(Entry {
            key,
            value,
            key_at,
            value_at,
        });
    }
}

impl Flatten<'_> {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        let skipping = matches!(self.stack.last(), Some(Frame::Skip));
        match ev {
            Event::MappingStart(..) if skipping => self.stack.push(Frame::Skip),
            Event::SequenceStart(..) if skipping => self.stack.push(Frame::Skip),
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
            }
            _ if skipping => {}
            Event::MappingStart(..) => self.on_mapping_start(mark),
            Event::SequenceStart(..) => self.on_sequence_start(mark),
            Event::Scalar(text, style, _, _) => self.on_scalar(text, style, mark),
            Event::Alias(_) => {
                let at = self.origin(mark);
                self.fail(ConfigError::Syntax {
                    at,
                    reason: "YAML aliases are not supported in the configuration".into(),
                });
            }
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd => {}
        }
    }

    /// A mapping: the document's (its keys have no prefix), or the value of the pending key
    /// (its keys are prefixed with it). A mapping as a key is an error.
    fn on_mapping_start(&mut self, mark: Marker) {
        if self.stack.is_empty() {
            self.root_mapping = true;
            self.stack.push(Frame::Mapping {
                prefix: String::new(),
                key: None,
            });
            return;
        }
        match self.take_key() {
            Some((key, key_mark)) => {
                let key_at = self.origin(key_mark);
                if !self.first_time(&key, &key_at) {
                    return;
                }
                self.stack.push(Frame::Mapping {
                    prefix: format!("{key}."),
                    key: None,
                });
            }
            None => {
                let at = self.origin(mark);
                self.fail(ConfigError::Syntax {
                    at,
                    reason: "a configuration key must be a plain scalar, not a mapping".into(),
                });
            }
        }
    }

    /// A sequence: as a value, an entry whose value is a sequence (its items are skipped);
    /// as the document or a key, an error.
    fn on_sequence_start(&mut self, mark: Marker) {
        match self.take_key() {
            Some((key, key_mark)) => {
                self.push_entry(key, key_mark, Raw::Sequence, mark);
                self.stack.push(Frame::Skip);
            }
            None => {
                let at = self.origin(mark);
                let reason = if self.stack.is_empty() {
                    "the configuration must be a mapping of keys to values, not a sequence"
                } else {
                    "a configuration key must be a plain scalar, not a sequence"
                };
                self.fail(ConfigError::Syntax {
                    at,
                    reason: reason.into(),
                });
            }
        }
    }

    /// A scalar: the pending key's value (a plain empty, `~` or `null` is null), or else the
    /// next key. As the whole document, only an empty one is allowed.
    fn on_scalar(&mut self, text: String, style: TScalarStyle, mark: Marker) {
        if self.stack.is_empty() {
            if !(style == TScalarStyle::Plain && text.is_empty()) {
                let at = self.origin(mark);
                self.fail(ConfigError::Syntax {
                    at,
                    reason: "the configuration must be a mapping of keys to values".into(),
                });
            }
            return;
        }
        match self.take_key() {
            Some((key, key_mark)) => {
                let null = style == TScalarStyle::Plain
                    && matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL");
                let value = if null { Raw::Null } else { Raw::Scalar(text) };
                self.push_entry(key, key_mark, value, mark);
            }
            None => {
                if let Some(Frame::Mapping { key, .. }) = self.stack.last_mut() {
                    *key = Some((text, mark));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_and_dotted_keys_flatten_alike_with_positions() {
        let text = "stoatflow:\n  watermark:\n    auto-interval-ms: 100\nbootstrap.servers: \"b:9092\"\nempty:\n";
        let entries = yaml(Path::new("a.yaml"), text).unwrap();
        let keys: Vec<_> = entries.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "stoatflow.watermark.auto-interval-ms",
                "bootstrap.servers",
                "empty"
            ]
        );
        assert_eq!(entries[0].key_at.to_string(), "a.yaml:3:5");
        assert_eq!(entries[0].value_at.to_string(), "a.yaml:3:23");
        assert_eq!(entries[1].value, Raw::Scalar("b:9092".into()));
        assert_eq!(entries[2].value, Raw::Null);
    }

    #[test]
    fn duplicates_and_non_mappings_are_refused() {
        let e = yaml(Path::new("d.yaml"), "a:\n  b: 1\na.b: 2\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "configuration key a.b at d.yaml:3:1 is already set at d.yaml:2:3"
        );
        let e = yaml(Path::new("s.yaml"), "- 1\n").unwrap_err();
        assert!(e.to_string().starts_with("s.yaml:1:1: "), "{e}");
        let e = yaml(Path::new("x.yaml"), "a: [1\n").unwrap_err();
        assert!(e.to_string().starts_with("x.yaml:"), "{e}");
        assert!(yaml(Path::new("empty.yaml"), "{}").unwrap().is_empty());
    }

    #[test]
    fn env_names_follow_the_documented_mapping() {
        assert_eq!(
            env_name("stoatflow.watermark.max-out-of-orderness-ms"),
            "STOATFLOW_WATERMARK_MAX_OUT_OF_ORDERNESS_MS"
        );
        assert_eq!(
            env_name("processing.guarantee"),
            "STOATFLOW_PROCESSING_GUARANTEE"
        );
        assert_eq!(
            kafka_key_of_env("STOATFLOW_KAFKA_SASL_PASSWORD").as_deref(),
            Some("kafka.sasl.password")
        );
        assert_eq!(kafka_key_of_env("STOATFLOW_KAFKA_"), None);
    }
}
