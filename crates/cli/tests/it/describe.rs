//! `stoatflow describe --example NAME`.

use crate::support::*;

#[test]
fn each_example_describes_its_topology() {
    for (example, topics) in [
        ("windowed-count", &["clicks", "click-counts"][..]),
        ("join", &["orders", "payments", "order-payments"][..]),
        ("suppress", &["readings", "sensor-final-counts"][..]),
    ] {
        let out = ok(&["describe", "--example", example], "");
        let text = stdout(&out);
        assert!(text.starts_with("Topologies:"), "{text}");
        for t in topics {
            assert!(text.contains(t), "{example}: {t} missing from\n{text}");
        }
    }
    let out = run(&["describe", "--example", "nope"], "");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("windowed-count"), "{}", stderr(&out));
}
