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
