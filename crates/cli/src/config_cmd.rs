//! `stoatflow config --config app.yaml`: the effective configuration, one
//! key a line with its value and where it came from (`file:line:column`,
//! `env VARIABLE`, `default`), the environment's overrides applied as
//! `run` applies them. Secrets print as `<redacted>`.
//!
//! Owns the printing only: the values and their origins are
//! `stoatflow::config`'s (`AppConfig::effective`).

use std::path::Path;

use stoatflow::config::{ConfigLoader, Origin};

use crate::out::outln;

pub fn run(config: &Path) -> anyhow::Result<()> {
    let config = ConfigLoader::new().yaml_file(config)?.env().build()?;
    let settings = config.effective();
    let key_width = settings.iter().map(|s| s.key.len()).max().unwrap_or(0);
    let value_width = settings
        .iter()
        .map(|s| s.value.chars().count())
        .max()
        .unwrap_or(0)
        .min(32);
    for s in settings {
        outln!(
            "{:key_width$}  {:value_width$}  {}",
            s.key,
            s.value,
            source(&s.origin)
        )?;
    }
    Ok(())
}

/// Where a value came from, in a word or a position.
fn source(origin: &Origin) -> String {
    match origin {
        Origin::File { file, line, column } => format!("{}:{line}:{column}", file.display()),
        Origin::Env { var } => format!("env {var}"),
        Origin::Default => "default".into(),
        other => other.to_string(),
    }
}
