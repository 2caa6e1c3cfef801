//! Deeply nested YAML is refused with an error, not a stack overflow.
//!
//! In a test binary of its own: a stack overflow aborts the whole process,
//! so were the loader to recurse per level again, it would take no other
//! test down with it.

use stoatflow_config::{ConfigError, ConfigLoader, MAX_NESTING_DEPTH};

fn refused(name: &str, yaml: &str) -> String {
    match ConfigLoader::new().yaml_str(name, yaml) {
        Ok(_) => panic!("{name}: accepted"),
        Err(e @ ConfigError::Syntax { .. }) => e.to_string(),
        Err(e) => panic!("{name}: {e}"),
    }
}

#[test]
fn a_hundred_thousand_nested_block_sequences_are_refused() {
    // 200 KB: `- - - … - 1`, each `- ` one more level, under a key.
    let yaml = format!("k:\n{}1\n", "- ".repeat(100_000));
    let e = refused("seq.yaml", &yaml);
    // The mapping is level 1, so the 32nd `- ` is the one too deep.
    let col = 2 * (MAX_NESTING_DEPTH - 1) + 1;
    assert_eq!(
        e,
        format!(
            "seq.yaml:2:{col}: nested deeper than {MAX_NESTING_DEPTH} levels; a configuration needs a few"
        )
    );
    // At the top, the first sequence is already wrong.
    let e = refused("top.yaml", &format!("{}1\n", "- ".repeat(100_000)));
    assert!(e.starts_with("top.yaml:1:1: "), "{e}");
}

#[test]
fn deep_mappings_under_a_key_and_flow_nesting_are_refused() {
    let mut block = String::new();
    for depth in 0..1_000 {
        block.push_str(&" ".repeat(depth));
        block.push_str("k:\n");
    }
    let e = refused("map.yaml", &block);
    assert!(e.contains("nested deeper than"), "{e}");
    let line = MAX_NESTING_DEPTH; // the 33rd mapping starts at the 33rd key
    assert!(e.starts_with(&format!("map.yaml:{}:", line + 1)), "{e}");

    // Flow nesting: the scanner reads ahead through the brackets and stops
    // itself at 256 levels; either refusal names the position.
    let flow = format!("k: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    assert!(refused("flow.yaml", &flow).starts_with("flow.yaml:1:"));
    let flow = format!("k: {}1{}\n", "{a: ".repeat(50_000), "}".repeat(50_000));
    assert!(refused("flowmap.yaml", &flow).starts_with("flowmap.yaml:1:"));
    let flow = format!("k: {}{}\n", "[".repeat(40), "]".repeat(40));
    assert!(refused("flow40.yaml", &flow).contains("nested deeper than"));
}

#[test]
fn nesting_up_to_the_limit_is_read() {
    // A mapping of MAX levels, the last one holding the value.
    let mut yaml = String::new();
    for depth in 0..MAX_NESTING_DEPTH {
        yaml.push_str(&"  ".repeat(depth));
        yaml.push_str(if depth + 1 == MAX_NESTING_DEPTH {
            "k: 1\n"
        } else {
            "k:\n"
        });
    }
    let e = ConfigLoader::new()
        .yaml_str("ok.yaml", &yaml)
        .and_then(ConfigLoader::build)
        .unwrap_err();
    // Parsed to the end: the only complaint is that no such key exists.
    let key = vec!["k"; MAX_NESTING_DEPTH].join(".");
    assert!(
        matches!(&e, ConfigError::UnknownKey { key: k, .. } if *k == key),
        "{e}"
    );
}
