//! Which topic names a log accepts: Kafka's rules, so that a topology that
//! runs on the embedded log runs unchanged on a Kafka cluster.
//!
//! Owns: [`check_topic_name`] and the rules it names. A legal name is 1 to
//! 249 characters, each an ASCII letter or digit, `.`, `_` or `-`, and is
//! neither `.` nor `..`. The embedded log checks names where they enter
//! (`create_topic`); names read back from an existing directory are held
//! only to the looser rule they were written under (a name must be safe as
//! a directory name), so a directory an earlier version wrote still opens.

use crate::error::LogError;

use crate::types::MAX_TOPIC_NAME_LEN;

/// Why `name` breaks Kafka's topic-name rules, naming the rule, or `None`
/// if it is legal.
fn broken_rule(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("a topic name must not be empty".into());
    }
    if name == "." || name == ".." {
        return Some("a topic name must not be \".\" or \"..\"".into());
    }
    if let Some((at, c)) = name
        .chars()
        .enumerate()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Some(format!(
            "a topic name may hold only ASCII letters, digits, '.', '_' and '-', \
             but character {at} is {c:?}"
        ));
    }
    if name.len() > MAX_TOPIC_NAME_LEN {
        return Some(format!(
            "a topic name is at most {MAX_TOPIC_NAME_LEN} characters, this one has {}",
            name.len()
        ));
    }
    None
}

/// Checks `name` against Kafka's topic-name rules (see the module
/// documentation).
///
/// # Errors
/// [`LogError::InvalidTopicName`] naming the topic and the rule it breaks.
pub fn check_topic_name(name: &str) -> Result<(), LogError> {
    match broken_rule(name) {
        None => Ok(()),
        Some(rule) => Err(LogError::InvalidTopicName {
            topic: name.to_owned(),
            rule,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_legal_names_pass() {
        let longest = "a".repeat(MAX_TOPIC_NAME_LEN);
        for name in [
            "t",
            "orders",
            "A.b_c-9",
            "...",
            ".hidden",
            "app-store-changelog",
            &longest,
        ] {
            assert!(check_topic_name(name).is_ok(), "{name:?}");
        }
    }

    #[test]
    fn each_broken_rule_is_named() {
        let too_long = "a".repeat(MAX_TOPIC_NAME_LEN + 1);
        let cases: &[(&str, &str)] = &[
            ("", "must not be empty"),
            (".", "must not be \".\" or \"..\""),
            ("..", "must not be \".\" or \"..\""),
            ("a b", "character 1 is ' '"),
            ("line\nbreak", "character 4 is '\\n'"),
            ("a*", "character 1 is '*'"),
            ("a?", "'?'"),
            ("a:b", "':'"),
            ("<a>", "'<'"),
            ("a|b", "'|'"),
            ("a/b", "'/'"),
            ("x\u{202e}y", "'\\u{202e}'"),
            ("é", "ASCII letters"),
            (&too_long, "at most 249 characters, this one has 250"),
        ];
        for (name, rule) in cases {
            let err = check_topic_name(name).expect_err(name);
            let msg = err.to_string();
            assert!(matches!(err, LogError::InvalidTopicName { .. }), "{err:?}");
            assert!(msg.contains(rule), "{name:?}: {msg}");
            assert!(msg.contains(&format!("{name:?}")), "names the topic: {msg}");
        }
    }
}
