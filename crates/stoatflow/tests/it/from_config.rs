//! `App::from_config` on the embedded backend, and the topology checks
//! that need both the settings and the topology.

use std::time::Duration;

use stoatflow::config::ConfigLoader;
use stoatflow::log::EmbeddedLog;
use stoatflow::*;

use crate::support::*;

#[test]
fn the_embedded_backend_from_yaml_runs_in_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "application.id: clicks-app\nstoatflow:\n  backend: embedded\n  embedded:\n    dir: {}\n  processing:\n    lanes: 1\n  commit-barrier:\n    interval-ms: 150\n",
        dir.path().display()
    );
    let config = ConfigLoader::new()
        .yaml_str("app.yaml", &yaml)
        .unwrap()
        .build()
        .unwrap();
    let (mut app, log) = embedded_app(&config);
    produce_and_run(&mut app, &*log);
    drop((app, log));
    // The results are on disk, in the configured directory.
    let log = EmbeddedLog::open(dir.path()).unwrap();
    assert_eq!(read_output(&log), expected());
}

#[test]
fn the_memory_backend_from_a_map() {
    let config = ConfigLoader::new()
        .map([
            ("application.id", "facade"),
            ("stoatflow.backend", "memory"),
            ("stoatflow.processing.lanes", "2"),
        ])
        .build()
        .unwrap();
    let (mut app, log) = embedded_app(&config);
    produce_and_run(&mut app, &*log);
    assert_eq!(read_output(&*log), expected());
}

#[test]
fn an_app_closed_once_its_input_is_consumed_commits_every_result() {
    let config = ConfigLoader::new()
        .map([
            ("application.id", "facade"),
            ("stoatflow.backend", "memory"),
        ])
        .build()
        .unwrap();
    let (mut app, log) = embedded_app(&config);
    topics(&app);
    produce(&*log);
    app.start().unwrap();
    assert!(app.wait_until_consumed(Duration::from_secs(60)).unwrap());
    assert!(
        app.close(Duration::from_secs(30)),
        "close: {:?}",
        app.error()
    );
    assert_eq!(read_output(&*log), expected());
}

#[test]
fn direct_dispatch_with_a_window_is_refused_when_the_app_is_built() {
    let config = ConfigLoader::new()
        .yaml_str(
            "app.yaml",
            "application.id: facade\nstoatflow:\n  backend: memory\n  processing:\n    dispatch-mode: DIRECT\n",
        )
        .unwrap()
        .build()
        .unwrap();
    let e = App::from_config(topology(), &config).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("dispatch mode DIRECT has no watermarks") && msg.contains("topic clicks"),
        "{msg}"
    );
}

#[test]
fn disabled_coordination_with_a_window_is_refused_when_the_app_is_built() {
    let config = ConfigLoader::new()
        .env_vars([
            ("STOATFLOW_APPLICATION_ID", "facade"),
            ("STOATFLOW_BACKEND", "memory"),
            (
                "STOATFLOW_PROCESSING_TIMESTAMP_COORDINATION_MODE",
                "DISABLED",
            ),
        ])
        .build()
        .unwrap();
    let e = App::from_config(topology(), &config).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("timestamp-coordination-mode is DISABLED") && msg.contains("topic clicks"),
        "{msg}"
    );
    // A stateless topology has nothing the watermark drives: accepted.
    let mut b = StreamsBuilder::new();
    b.stream(INPUT, Consumed::with(Serdes::string(), Serdes::string()))
        .to(OUTPUT, Produced::with(Serdes::string(), Serdes::string()));
    assert!(App::from_config(b.build().unwrap(), &config).is_ok());
}

#[test]
fn the_endpoints_start_from_the_settings() {
    let config = ConfigLoader::new()
        .map([
            ("application.id", "facade"),
            ("stoatflow.backend", "memory"),
            ("runtime.endpoints.listen", "127.0.0.1:0"),
        ])
        .build()
        .unwrap();
    let app = App::from_config(topology(), &config).unwrap();
    let server = app.start_endpoints(&config).unwrap().expect("enabled");
    assert!(server.local_addr().ip().is_loopback());
    assert_ne!(server.local_addr().port(), 0);
    server.shutdown();
    let off = ConfigLoader::new()
        .map([
            ("application.id", "facade"),
            ("stoatflow.backend", "memory"),
            ("runtime.endpoints.enabled", "false"),
        ])
        .build()
        .unwrap();
    assert!(app.start_endpoints(&off).unwrap().is_none());
}

/// The endpoints bind before there is an application: a taken address is
/// an error naming the key that set it, and the address bound is served
/// once the application exists.
#[test]
fn the_endpoints_bind_first_and_a_taken_address_names_the_key() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let settings = |listen: &str| {
        ConfigLoader::new()
            .map([
                ("application.id", "facade"),
                ("stoatflow.backend", "memory"),
                ("runtime.endpoints.listen", listen),
            ])
            .build()
            .unwrap()
    };
    let e = App::bind_endpoints(&settings(&addr)).unwrap_err();
    assert!(
        e.to_string().starts_with(&format!(
            "runtime.endpoints.listen: cannot listen on {addr}: "
        )),
        "{e}"
    );
    drop(taken);
    let config = settings("127.0.0.1:0");
    let bound = App::bind_endpoints(&config).unwrap().expect("enabled");
    let at = bound.local_addr();
    let app = App::from_config(topology(), &config).unwrap();
    let server = app.serve_endpoints(bound).unwrap();
    assert_eq!(server.local_addr(), at);
    server.shutdown();
}

/// The server's limits come from the YAML keys: a silent connection is
/// closed at `runtime.endpoints.request-timeout-ms` (250 ms here, where the
/// default would hold it for 5 s).
#[test]
fn the_endpoints_limits_come_from_the_settings() {
    use std::io::Read as _;
    use std::time::Instant;

    let config = ConfigLoader::new()
        .map([
            ("application.id", "facade"),
            ("stoatflow.backend", "memory"),
            ("runtime.endpoints.listen", "127.0.0.1:0"),
            ("runtime.endpoints.request-timeout-ms", "250"),
        ])
        .build()
        .unwrap();
    let app = App::from_config(topology(), &config).unwrap();
    let server = app.start_endpoints(&config).unwrap().expect("enabled");
    let mut silent = std::net::TcpStream::connect(server.local_addr()).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 64];
    let read = silent.read(&mut buf);
    assert!(
        matches!(read, Ok(0))
            || read
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "the silent connection was not closed: {read:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(2_500),
        "closed only after {:?}",
        started.elapsed()
    );
    server.shutdown();
}

/// The facade's `App` takes a state listener and an uncaught-error handler
/// whatever its backend: the listener hears the lifecycle, and the handler
/// hears the error that stops the app (here, its output topic is missing).
#[test]
fn the_app_takes_a_state_listener_and_an_error_handler() {
    let config = ConfigLoader::new()
        .map([
            ("application.id", "facade"),
            ("stoatflow.backend", "memory"),
        ])
        .build()
        .unwrap();
    let (mut app, log) = embedded_app(&config);
    let states = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = states.clone();
    app.set_state_listener(move |new, old| seen.lock().unwrap().push((old, new)));
    produce_and_run(&mut app, &*log);
    use AppState::*;
    assert_eq!(
        *states.lock().unwrap(),
        [
            (Created, Rebalancing),
            (Rebalancing, Running),
            (Running, PendingShutdown),
            (PendingShutdown, NotRunning)
        ]
    );

    let (mut app, _log) = embedded_app(&config);
    app.ensure_topic(&stoatflow::log::TopicSpec::new(INPUT, 1))
        .unwrap();
    let handled = std::sync::Arc::new(std::sync::Mutex::new(None));
    let h = handled.clone();
    app.set_uncaught_error_handler(move |e| *h.lock().unwrap() = Some(e.to_string()));
    app.start().unwrap();
    assert_eq!(app.wait_for_state(Error, Duration::from_secs(10)), Error);
    let handled = handled
        .lock()
        .unwrap()
        .clone()
        .expect("the handler heard it");
    assert!(handled.contains(OUTPUT), "{handled}");
}
