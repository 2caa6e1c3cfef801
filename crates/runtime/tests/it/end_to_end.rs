//! The runtime's final output equals the test driver's where no record is
//! late under either clock, whatever the lane count.

use std::sync::Arc;

use stoatflow_log::EmbeddedLog;

use crate::support::*;

#[test]
fn tumbling_count_equals_the_driver_on_one_lane() {
    let records = input(600, 7, 1);
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    produce(&*log, &records, 50);
    run_to_end(&log, "e2e-one", 1);
    let engine = regular(read_output(&*log));
    assert_each_once(&engine);
    let driver = regular(driver_finals(tumbling_count(), &records));
    assert!(!driver.is_empty());
    assert_eq!(engine, driver);
}

#[test]
fn output_is_the_same_whatever_the_lane_count() {
    let records = input(500, 11, 2);
    let driver = regular(driver_finals(tumbling_count(), &records));
    for lanes in [1, 2, 4] {
        let log = Arc::new(EmbeddedLog::in_memory());
        create_topics(&*log);
        produce(&*log, &records, 40);
        run_to_end(&log, &format!("e2e-lanes-{lanes}"), lanes);
        let engine = regular(read_output(&*log));
        assert_each_once(&engine);
        assert_eq!(engine, driver, "{lanes} lanes");
    }
}

#[test]
fn input_arriving_while_running_is_counted() {
    let records = input(300, 5, 3);
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    let mut app = stoatflow_runtime::StreamsApp::with_log(
        tumbling_count(),
        config("e2e-live", 2),
        log.clone(),
    )
    .unwrap();
    app.start().unwrap();
    for chunk in records.chunks(37) {
        produce(&*log, chunk, 37);
        std::thread::sleep(std::time::Duration::from_millis(3));
    }
    assert!(
        app.wait_until_caught_up(std::time::Duration::from_secs(60))
            .unwrap()
    );
    assert!(app.close(std::time::Duration::from_secs(30)));
    let engine = regular(read_output(&*log));
    assert_each_once(&engine);
    assert_eq!(engine, regular(driver_finals(tumbling_count(), &records)));
}

/// The race of R and F (docs/barriers.md#floors) with real lanes: R (an
/// on-time record of window [0, 10 s)) is dispatched before F (records on
/// every partition far ahead, which move the watermark past the window's
/// close), but R's lane is slow. The barrier stamped with the advanced
/// watermark reaches R's lane behind R (FIFO), so R is judged against the
/// previous stamp: admitted, counted, and the window's final count, R
/// included, is committed once.
#[test]
fn the_race_of_r_and_f_admits_r_on_a_slow_lane() {
    use std::time::Duration;
    use stoatflow_runtime::{StreamsApp, partition_for_key};
    use stoatflow_streams::TimeWindows;

    const R: i64 = -7;
    let topology = || {
        windowed_count(
            TimeWindows::of_size_and_grace(
                Duration::from_millis(WINDOW_MS as u64),
                Duration::from_millis(GRACE_MS as u64),
            ),
            WINDOW_MS,
            |s| {
                s.peek(|_k: &String, v: &i64| {
                    if *v == R {
                        std::thread::sleep(Duration::from_millis(300));
                    }
                })
            },
        )
    };
    let key_on = |p: u32, prefix: &str| {
        (0..)
            .map(|i| format!("{prefix}{i}"))
            .find(|k| partition_for_key(k.as_bytes(), PARTITIONS) == p)
            .unwrap()
    };
    let r_key = key_on(0, "r");
    let t0 = START - START % WINDOW_MS;
    let mut records = vec![
        Input {
            key: r_key.clone(),
            ts: t0 + 1_000,
            value: 1,
        },
        Input {
            key: r_key.clone(),
            ts: t0 + 9_000,
            value: R,
        },
    ];
    // F: every partition far ahead (partition 0 after R, in offset order).
    for p in 0..PARTITIONS {
        records.push(Input {
            key: key_on(p, "f"),
            ts: t0 + 100_000,
            value: 2,
        });
    }
    let log = Arc::new(EmbeddedLog::in_memory());
    create_topics(&*log);
    produce(&*log, &records, 100);
    let mut app = StreamsApp::with_log(topology(), config("race", 3), log.clone()).unwrap();
    app.start().unwrap();
    assert!(app.wait_until_caught_up(Duration::from_secs(30)).unwrap());
    assert!(app.close(Duration::from_secs(30)));
    let out = read_output(&*log);
    assert_eq!(
        out.get(&(r_key.clone(), t0)),
        Some(&vec![2]),
        "R counted once in its window: {out:?}"
    );
    assert_eq!(out, driver_finals(topology(), &records));
}

/// Out-of-order input (disorder below the source's bound, above what the
/// driver's one-number clock tolerates with no grace): the engine's final
/// counts are the same on 1, 2 and 4 lanes with randomized lane delays, and
/// never lower than the driver's (the engine's floor trails the driver's).
#[test]
fn out_of_order_input_gives_one_output_whatever_the_lanes_and_delays() {
    use std::time::Duration;
    use stoatflow_runtime::StreamsApp;
    use stoatflow_streams::TimeWindows;

    fn topology(delay_seed: u64) -> stoatflow_streams::Topology {
        windowed_count(
            TimeWindows::of_size_with_no_grace(Duration::from_millis(WINDOW_MS as u64)),
            WINDOW_MS,
            |s| {
                s.peek(move |_k: &String, v: &i64| {
                    // A pseudo-random few records stall their lane.
                    let h = (*v as u64 ^ delay_seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58;
                    if h == 0 {
                        std::thread::sleep(Duration::from_millis(3));
                    }
                })
            },
        )
    }

    let seeds: u64 = if std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some() {
        8
    } else {
        3
    };
    let records = input(600, 5, 21);
    let driver = regular(driver_finals(topology(0), &records));
    let mut first: Option<Finals> = None;
    for seed in 0..seeds {
        for lanes in [1, 2, 4] {
            let log = Arc::new(EmbeddedLog::in_memory());
            create_topics(&*log);
            produce(&*log, &records, 30);
            let app_id = format!("ooo-{seed}-{lanes}");
            let mut app =
                StreamsApp::with_log(topology(seed), config(&app_id, lanes), log.clone()).unwrap();
            app.start().unwrap();
            assert!(app.wait_until_caught_up(Duration::from_secs(60)).unwrap());
            assert!(app.close(Duration::from_secs(30)));
            let engine = regular(read_output(&*log));
            assert_each_once(&engine);
            for (window, counts) in &driver {
                let ours = engine.get(window).map_or(0, |c| c[0]);
                assert!(
                    ours >= counts[0],
                    "seed {seed}, {lanes} lanes: window {window:?} counted {ours}, the driver {}",
                    counts[0]
                );
            }
            match &first {
                None => first = Some(engine),
                Some(f) => assert_eq!(&engine, f, "seed {seed}, {lanes} lanes"),
            }
        }
    }
    let total = |f: &Finals| f.values().map(|c| c[0]).sum::<i64>();
    assert!(
        total(first.as_ref().unwrap()) > total(&driver),
        "the input must be out of order enough for the driver to drop some records"
    );
}
