//! A YAML text is taken whole or refused: no key silently merged, nothing
//! silently ignored, no empty file silently read as the defaults.

use stoatflow_config::{ConfigError, ConfigLoader, MAX_FILE_BYTES};

fn err(yaml: &str) -> ConfigError {
    match ConfigLoader::new().yaml_str("app.yaml", yaml) {
        Ok(_) => panic!("accepted: {yaml:?}"),
        Err(e) => e,
    }
}

#[test]
fn a_mapping_key_written_twice_is_refused_naming_both_lines() {
    let e = err("stoatflow:\n  backend: memory\napplication.id: a\nstoatflow:\n  lanes: 2\n");
    assert!(
        matches!(&e, ConfigError::Duplicate { key, .. } if key == "stoatflow"),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "configuration key stoatflow at app.yaml:4:1 is already set at app.yaml:1:1"
    );
    // Deeper, and a mapping against a leaf of the same path either way.
    let e = err("stoatflow:\n  watermark:\n    a: 1\n  watermark:\n    b: 2\n");
    assert_eq!(
        e.to_string(),
        "configuration key stoatflow.watermark at app.yaml:4:3 is already set at app.yaml:2:3"
    );
    let e = err("stoatflow.watermark: 5\nstoatflow:\n  watermark:\n    b: 2\n");
    assert_eq!(
        e.to_string(),
        "configuration key stoatflow.watermark at app.yaml:3:3 is already set at app.yaml:1:1"
    );
    let e = err("kafka: {sasl: {a: 1}, sasl: {b: 2}}\n");
    assert!(
        matches!(&e, ConfigError::Duplicate { key, .. } if key == "kafka.sasl"),
        "{e}"
    );
    // Dotted and nested spellings of different keys still combine.
    ConfigLoader::new()
        .yaml_str(
            "app.yaml",
            "application.id: a\nstoatflow.backend: memory\nstoatflow:\n  processing.lanes: 2\n",
        )
        .and_then(ConfigLoader::build)
        .expect("different keys");
}

#[test]
fn a_second_document_is_refused_at_its_start() {
    let e = err("application.id: a\n---\napplication.id: b\n");
    assert_eq!(
        e.to_string(),
        "app.yaml:2:1: a second YAML document; the configuration must be one document"
    );
    // Even an empty one; an explicit start or end of the only one is fine.
    assert!(
        err("application.id: a\n---\n")
            .to_string()
            .contains("second YAML document")
    );
    ConfigLoader::new()
        .yaml_str("app.yaml", "---\napplication.id: a\n...\n")
        .expect("one document");
}

#[test]
fn a_nul_byte_is_refused_naming_its_position() {
    let e = err("application.id: a\nstoatflow.backend: x\0stoatflow.processing.lanes: 0\n");
    assert_eq!(
        e.to_string(),
        "app.yaml:2:21: a NUL byte; a configuration file is text and the parser would ignore everything after it"
    );
}

#[test]
fn a_byte_order_mark_is_dropped() {
    let config = ConfigLoader::new()
        .yaml_str("app.yaml", "\u{feff}application.id: bom\n")
        .and_then(ConfigLoader::build)
        .expect("BOM");
    assert_eq!(config.runtime.application_id(), "bom");
    // Positions on the first line do not count it.
    let e = err("\u{feff}a: 1\na: 2\n");
    assert_eq!(
        e.to_string(),
        "configuration key a at app.yaml:2:1 is already set at app.yaml:1:1"
    );
}

#[test]
fn a_file_without_settings_is_refused_and_braces_lack_the_application_id() {
    let dir = tempfile::tempdir().unwrap();
    for (i, text) in [
        "",
        "\n\n",
        "# all commented out\n# stoatflow:\n",
        "---\n",
        "\u{feff}",
    ]
    .iter()
    .enumerate()
    {
        let file = dir.path().join(format!("empty{i}.yaml"));
        std::fs::write(&file, text).unwrap();
        let e = ConfigLoader::new().yaml_file(&file).unwrap_err();
        assert!(matches!(e, ConfigError::Empty { .. }), "{text:?}: {e}");
        assert_eq!(
            e.to_string(),
            format!(
                "configuration file {} holds no settings (it is empty or only comments); write application.id: NAME in it to run with every other default",
                file.display()
            )
        );
    }
    // `{}` is a configuration with nothing set: refused for the one key
    // without a default, as nothing at all is.
    let braces = ConfigLoader::new()
        .yaml_str("app.yaml", "{}\n")
        .and_then(ConfigLoader::build)
        .unwrap_err();
    let unset = ConfigLoader::new().build().unwrap_err();
    assert_eq!(braces.to_string(), unset.to_string());
    assert!(
        matches!(&braces, ConfigError::Missing { key, .. } if key == "application.id"),
        "{braces}"
    );
}

#[test]
fn a_file_over_the_size_limit_is_refused_without_reading_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.yaml");
    let line = "# padding padding padding padding padding padding padding padding\n";
    let mut text = String::from("application.id: a\n");
    while text.len() <= MAX_FILE_BYTES {
        text.push_str(line);
    }
    std::fs::write(&file, &text).unwrap();
    let e = ConfigLoader::new().yaml_file(&file).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "configuration file {} is larger than the {MAX_FILE_BYTES} bytes a configuration may have",
            file.display()
        )
    );
    assert!(matches!(err(&text), ConfigError::TooLarge { .. }));
    // At the limit, it is read.
    text.truncate(MAX_FILE_BYTES - 1);
    text.truncate(text.rfind('\n').unwrap() + 1);
    ConfigLoader::new()
        .yaml_str("app.yaml", &text)
        .expect("at the limit");
}

#[test]
fn a_file_that_is_not_utf8_names_the_first_bad_byte() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("latin1.yaml");
    std::fs::write(&file, b"application.id: a\nname: caf\xe9\n").unwrap();
    let e = ConfigLoader::new().yaml_file(&file).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:2:10: not UTF-8 text; a configuration file must be UTF-8",
            file.display()
        )
    );
}

#[test]
fn long_keys_and_values_are_shortened_in_errors() {
    let value = "v".repeat(100_000);
    let e = ConfigLoader::new()
        .yaml_str(
            "app.yaml",
            &format!("stoatflow.processing.lanes: {value}\n"),
        )
        .and_then(ConfigLoader::build)
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(e.len() < 300, "{} bytes: {}", e.len(), &e[..300]);
    assert!(e.ends_with("bytes in all)"), "{e}");
    let key = "k".repeat(100_000);
    let e = ConfigLoader::new()
        .yaml_str("app.yaml", &format!("? {key}\n: 1\n"))
        .and_then(ConfigLoader::build)
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(e.len() < 300, "{} bytes", e.len());
    assert!(e.starts_with("unknown configuration key kkkk"), "{e}");
    assert!(e.contains("… (100000 bytes in all) at app.yaml:1:3"), "{e}");
}
