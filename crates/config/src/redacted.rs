//! [`Redacted`] and [`PropertyValue`]: values that must never be printed.
//!
//! Owns the rule for which keys hold secrets ([`is_secret_key`]) and the
//! wrapper whose `Debug` and `Display` print a placeholder. Knows nothing of
//! where a value came from.

use std::fmt;

/// What a redacted value prints as.
pub const REDACTED: &str = "<redacted>";

/// A value whose `Debug` and `Display` never show it; [`Redacted::expose`]
/// hands it to the one place that needs it (the client that connects).
#[derive(Clone, PartialEq, Eq)]
pub struct Redacted<T>(T);

impl<T> Redacted<T> {
    /// Wraps a secret.
    pub fn new(value: T) -> Self {
        Redacted(value)
    }

    /// The secret itself.
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> fmt::Debug for Redacted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl<T> fmt::Display for Redacted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// A pass-through client property's value: plain, or a secret when its key
/// says so ([`is_secret_key`]).
#[derive(Clone, PartialEq, Eq)]
pub enum PropertyValue {
    /// Printable.
    Plain(String),
    /// Never printed.
    Secret(Redacted<String>),
}

impl PropertyValue {
    /// Classifies `value` by its key.
    pub fn for_key(key: &str, value: String) -> Self {
        if is_secret_key(key) {
            PropertyValue::Secret(Redacted::new(value))
        } else {
            PropertyValue::Plain(value)
        }
    }

    /// The value, for the client that connects.
    pub fn expose(&self) -> &str {
        match self {
            PropertyValue::Plain(s) => s,
            PropertyValue::Secret(s) => s.expose(),
        }
    }
}

impl fmt::Debug for PropertyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PropertyValue::Plain(s) => fmt::Debug::fmt(s, f),
            PropertyValue::Secret(s) => fmt::Debug::fmt(s, f),
        }
    }
}

/// Fragments of a key name that mark its value as a secret: passwords,
/// secrets, tokens, JAAS configs, credentials and anything naming a key
/// (key material, key passwords, API keys; a key file's location is
/// hidden too, which costs nothing).
const SECRET_MARKS: &[&str] = &[
    "password",
    "secret",
    "token",
    "jaas",
    "credential",
    "key",
    "private",
    "oauthbearer.config",
];

/// Whether `key` (any case) names a secret.
pub fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase().replace(['-', '_'], ".");
    SECRET_MARKS.iter().any(|m| key.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_print_as_a_placeholder() {
        for key in [
            "sasl.password",
            "ssl.key.password",
            "ssl.keystore.location",
            "ssl.key.pem",
            "sasl.jaas.config",
            "sasl.oauthbearer.client.secret",
            "SASL_TOKEN",
            "ssl.key.location",
            "sasl.oauthbearer.client.apikey",
        ] {
            let v = PropertyValue::for_key(key, "hunter2".into());
            assert_eq!(format!("{v:?}"), REDACTED, "{key}");
            assert_eq!(v.expose(), "hunter2");
        }
        let plain = PropertyValue::for_key("security.protocol", "SASL_SSL".into());
        assert_eq!(format!("{plain:?}"), "\"SASL_SSL\"");
        assert_eq!(Redacted::new(5).to_string(), REDACTED);
    }
}
