//! What a configuration text must be before the YAML parser sees it: at
//! most [`MAX_FILE_BYTES`] long, UTF-8, without a NUL byte (the parser would
//! take it for the end of the text and ignore the rest). A leading UTF-8
//! byte-order mark is dropped.
//!
//! Owns these checks and the file read that applies the size bound while
//! reading. Knows nothing of YAML.

use std::io::Read;
use std::path::Path;

use crate::error::{ConfigError, Origin};

/// The largest configuration text accepted, in bytes. A configuration
/// file is a few kilobytes; this leaves ample room and keeps a wrong file
/// (a log, a dump) from being read and parsed whole.
pub const MAX_FILE_BYTES: usize = 1 << 20;

/// The text of the file at `path`, read no further than one byte past
/// [`MAX_FILE_BYTES`], then checked as [`checked`] does.
pub(crate) fn read_file(path: &Path) -> Result<String, ConfigError> {
    let read_error = |source| ConfigError::Read {
        file: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(too_large(path));
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        // The valid prefix is UTF-8 by definition; lossy only to satisfy the type.
        let before = String::from_utf8_lossy(valid);
        ConfigError::Syntax {
            at: position(path, &before, before.len()),
            reason: "not UTF-8 text; a configuration file must be UTF-8".into(),
        }
    })
}

/// `text` without a leading byte-order mark, or why it cannot be parsed.
pub(crate) fn checked<'t>(name: &Path, text: &'t str) -> Result<&'t str, ConfigError> {
    if text.len() > MAX_FILE_BYTES {
        return Err(too_large(name));
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Some(at) = text.find('\0') {
        return Err(ConfigError::Syntax {
            at: position(name, text, at),
            reason: "a NUL byte; a configuration file is text and the parser would ignore \
                     everything after it"
                .into(),
        });
    }
    Ok(text)
}

fn too_large(name: &Path) -> ConfigError {
    ConfigError::TooLarge {
        file: name.to_owned(),
        max: MAX_FILE_BYTES,
    }
}

/// The 1-based line and column (in characters) of byte `at` of `text`.
fn position(name: &Path, text: &str, at: usize) -> Origin {
    let before = &text[..at];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Origin::File {
        file: name.to_owned(),
        line: before.matches('\n').count() + 1,
        column: before[line_start..].chars().count() + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_lines_and_characters() {
        let at = position(Path::new("p.yaml"), "a: 1\nbé: x\0", 11);
        assert_eq!(at.to_string(), "p.yaml:2:6");
        assert_eq!(
            position(Path::new("p.yaml"), "\0", 0).to_string(),
            "p.yaml:1:1"
        );
    }
}
