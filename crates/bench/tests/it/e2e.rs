//! The end-to-end tumbling run commits exactly the final windows the input
//! closes: with events at 0..N ms over 1,000 keys and 10 s windows, every
//! window ending at or before the last event's time, once per key.

use stoatflow_bench::e2e::run_e2e_tumbling;

#[test]
fn e2e_tumbling_commits_each_closed_window_once_on_one_and_two_lanes() {
    let events = 25_000;
    // Windows [0, 10 s) and [10 s, 20 s) close at 20 s <= 24 999 ms; the
    // third stays open at the final barrier.
    for lanes in [1, 2] {
        let (seconds, outputs) = run_e2e_tumbling(events, lanes).unwrap();
        assert!(seconds > 0.0);
        assert_eq!(outputs, 2 * 1_000, "{lanes} lanes");
    }
}

/// q5 end to end commits hot-item counts, the same number whatever the lane
/// count (the output of every partition is the same sequence).
#[test]
fn e2e_q5_commits_the_same_results_on_one_and_two_lanes() {
    let generator = stoatflow_bench::nexmark::GeneratorConfig::default();
    let counts: Vec<u64> = [1, 2]
        .into_iter()
        .map(|lanes| {
            stoatflow_bench::e2e::run_e2e_q5(40_000, lanes, &generator)
                .unwrap()
                .1
        })
        .collect();
    assert!(counts[0] > 0, "q5 committed no result");
    assert_eq!(counts[0], counts[1]);
}
