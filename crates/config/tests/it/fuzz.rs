//! Fuzz target of the YAML configuration loader: a file's text, arbitrary
//! or mutated from valid configurations (the example file among them) with
//! YAML's own tokens (anchors and aliases, flow collections, tags, block
//! scalars, documents) and boundary numbers. The loader and the build into
//! an `AppConfig` return a configuration or an error that says something,
//! never panic, never allocate past the harness's bound (aliases are not
//! expanded into copies), and give the same answer for the same text.

use stoatflow_config::ConfigLoader;
use stoatflow_fuzzing::{Tier, fuzz, inputs};

const SEEDS: &[&str] = &[
    "application.id: orders\nstoatflow:\n  backend: memory\n",
    "application.id: a\nstoatflow.watermark.max.out.of.orderness.ms: 2000\n\
     kafka:\n  bootstrap.servers: localhost:9092\n  sasl.password: secret\n",
    "{}\n",
    "a: &x [1, 2]\nb: *x\n",
];

const TOKENS: &[&[u8]] = &[
    b": ",
    b"- ",
    b"\n",
    b"  ",
    b"\t",
    b"&a ",
    b"*a",
    b"<<: ",
    b"[",
    b"]",
    b"{",
    b"}",
    b", ",
    b"? ",
    b"!!binary ",
    b"!tag ",
    b"|\n",
    b">-\n",
    b"---\n",
    b"...\n",
    b"%YAML 1.2\n",
    b"#",
    b"'",
    b"\"",
    b"\\u0000",
    b"~",
    b"4294967296",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"1e400",
    b".nan",
    b"-.inf",
    b"0x7fffffff",
    b"application.id: ",
    b"stoatflow.",
    b"kafka.",
    b"\xef\xbb\xbf",
];

fn load(text: &str) -> String {
    match ConfigLoader::new().yaml_str("fuzz.yaml", text) {
        Ok(loader) => match loader.build() {
            Ok(config) => format!("ok {config:?}"),
            Err(e) => format!("build error {e}"),
        },
        Err(e) => format!("load error {e}"),
    }
}

/// Any text: a configuration or an error with a message, the same twice.
#[test]
fn yaml_configurations_load_or_err() {
    let example = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/stoatflow.yaml"),
    )
    .expect("the example configuration");
    let mut seeds: Vec<Vec<u8>> = SEEDS.iter().map(|s| s.as_bytes().to_vec()).collect();
    seeds.push(example);
    fuzz(
        module_path!(),
        "yaml_configurations_load_or_err",
        // Each input is a whole request (or configuration) end to end.
        Tier {
            short: 2_000,
            heavy: 5_000,
        },
        inputs(seeds, TOKENS, 256),
        |bytes| {
            let text = String::from_utf8_lossy(&bytes);
            let first = load(&text);
            proptest::prop_assert!(!first.ends_with("error "), "an empty error message");
            proptest::prop_assert_eq!(load(&text), first);
            Ok(())
        },
    );
}
