//! [`ConfigLoader`]: layers of settings (YAML files or texts, string maps,
//! the environment), later layers overriding earlier ones key by key.
//!
//! Owns the layering and the environment's mapping onto keys. Knows no
//! key's meaning: [`AppConfig`] does.

use std::collections::HashMap;
use std::path::Path;

use crate::app_config::AppConfig;
use crate::error::{ConfigError, Origin};
use crate::keys::KEYS;
use crate::project_vars::{self, ENV_PREFIX};
use crate::source::{self, Entry, Raw, env_name, kafka_key_of_env};
use crate::text;

/// Collects settings, then [`ConfigLoader::build`]s an [`AppConfig`].
///
/// ```
/// use stoatflow_config::ConfigLoader;
/// let config = ConfigLoader::new()
///     .yaml_str("app.yaml", "application.id: orders\nstoatflow:\n  backend: memory\n")?
///     .env_vars([("STOATFLOW_WATERMARK_MAX_OUT_OF_ORDERNESS_MS", "2000")])
///     .build()?;
/// assert_eq!(config.runtime.application_id(), "orders");
/// assert_eq!(config.runtime.streams.max_out_of_orderness.as_millis(), 2000);
/// # Ok::<(), stoatflow_config::ConfigError>(())
/// ```
#[derive(Debug, Default)]
pub struct ConfigLoader {
    entries: Vec<Entry>,
    /// The first (by name) `STOATFLOW_` variable that sets no key, refused
    /// by [`ConfigLoader::build`].
    unknown_var: Option<ConfigError>,
}

impl ConfigLoader {
    /// No settings yet: everything defaulted.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the settings of a YAML file. No more than
    /// [`MAX_FILE_BYTES`](crate::MAX_FILE_BYTES) (and one) bytes of it are read.
    ///
    /// # Errors
    /// [`ConfigError::Read`], [`ConfigError::TooLarge`], text that is not
    /// UTF-8, or any error of [`ConfigLoader::yaml_str`].
    pub fn yaml_file(self, path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let text = text::read_file(path)?;
        self.yaml_str(path, &text)
    }

    /// Adds the settings of a YAML text; `name` stands for its file in
    /// positions. A leading byte-order mark is ignored.
    ///
    /// # Errors
    /// [`ConfigError::TooLarge`], [`ConfigError::Empty`] (nothing but
    /// comments: write `application.id: NAME` for every other default),
    /// [`ConfigError::Duplicate`] (a key written twice, as a value or as a
    /// mapping, naming both positions), or, with its position, a syntax
    /// error, a NUL byte, a second document, nesting deeper than
    /// [`MAX_NESTING_DEPTH`](crate::MAX_NESTING_DEPTH), or a document that is
    /// not a mapping.
    pub fn yaml_str(mut self, name: impl AsRef<Path>, text: &str) -> Result<Self, ConfigError> {
        self.entries.extend(source::yaml(name.as_ref(), text)?);
        Ok(self)
    }

    /// Adds dotted-key settings from a string map.
    pub fn map<K: Into<String>, V: Into<String>>(
        mut self,
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        self.entries.extend(entries.into_iter().map(|(k, v)| Entry {
            key: k.into(),
            value: Raw::Scalar(v.into()),
            key_at: Origin::Map,
            value_at: Origin::Map,
        }));
        self
    }

    /// Adds the overrides of this process's environment (see
    /// [`env_name`](crate::env_name) and [`KAFKA_ENV_PREFIX`](crate::KAFKA_ENV_PREFIX)).
    /// Variables that are not valid UTF-8 are skipped.
    pub fn env(self) -> Self {
        let vars = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
        self.env_vars(vars)
    }

    /// Adds the overrides among `vars`. Variables not under `STOATFLOW_`,
    /// and the project's own ([`PROJECT_ENV_VARS`](crate::PROJECT_ENV_VARS)),
    /// are ignored; any other `STOATFLOW_` variable that sets no key makes
    /// [`ConfigLoader::build`] fail naming it (a misspelt override).
    pub fn env_vars<K: Into<String>, V: Into<String>>(
        mut self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let known: HashMap<String, &str> = KEYS.iter().map(|s| (env_name(s.key), s.key)).collect();
        let mut unknown: Vec<String> = Vec::new();
        let mut found: Vec<Entry> = vars
            .into_iter()
            .filter_map(|(var, value)| {
                let var: String = var.into();
                if !var.starts_with(ENV_PREFIX) || project_vars::is_project_var(&var) {
                    return None;
                }
                let key = known
                    .get(&var)
                    .map(|k| (*k).to_owned())
                    .or_else(|| kafka_key_of_env(&var));
                let Some(key) = key else {
                    unknown.push(var);
                    return None;
                };
                let at = Origin::Env { var };
                Some(Entry {
                    key,
                    value: Raw::Scalar(value.into()),
                    key_at: at.clone(),
                    value_at: at,
                })
            })
            .collect();
        found.sort_by(|a, b| a.key.cmp(&b.key));
        self.entries.extend(found);
        if self.unknown_var.is_none() {
            self.unknown_var = unknown.iter().min().map(|v| project_vars::unknown(v));
        }
        self
    }

    /// The typed configuration: later settings of a key override earlier
    /// ones; everything unset takes its default.
    ///
    /// # Errors
    /// A `STOATFLOW_` variable that sets no key, an unknown key (each with a
    /// did-you-mean), a wrong type, a value out of
    /// range, or a missing or inapplicable key, each naming the key and
    /// where it was written.
    pub fn build(self) -> Result<AppConfig, ConfigError> {
        if let Some(e) = self.unknown_var {
            return Err(e);
        }
        let mut merged: Vec<Entry> = Vec::with_capacity(self.entries.len());
        let mut index: HashMap<String, usize> = HashMap::new();
        for e in self.entries {
            match index.get(&e.key) {
                Some(&i) => merged[i] = e,
                None => {
                    index.insert(e.key.clone(), merged.len());
                    merged.push(e);
                }
            }
        }
        AppConfig::from_entries(merged)
    }
}

impl AppConfig {
    /// The configuration of a YAML file with this process's environment
    /// overrides on top.
    ///
    /// # Errors
    /// See [`ConfigLoader::build`].
    pub fn from_yaml_file(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        ConfigLoader::new().yaml_file(path)?.env().build()
    }
}
