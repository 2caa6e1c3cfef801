//! The store routes on a running application (docs/operating.md#store-routes):
//! the stores listed, a key's committed value, a key's windows with their
//! finality, a range within its limit, and refusals naming what is wrong.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use stoatflow::config::ConfigLoader;
use stoatflow::*;

use crate::support::{INPUT, OUTPUT, WINDOW_MS, produce, topics};

const COUNTS: &str = "click-windows";
const TOTALS: &str = "click-totals";

/// The support topology's windowed count, in a named store kept an hour,
/// and a running total per key.
fn topology() -> Topology {
    let mut b = StreamsBuilder::new();
    let clicks = b.stream(
        INPUT,
        Consumed::with(Serdes::string(), Serdes::string()).with_watermark_strategy(
            WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(1)),
        ),
    );
    clicks
        .group_by_key()
        .windowed_by(TimeWindows::of_size_and_grace(
            Duration::from_millis(WINDOW_MS as u64),
            Duration::ZERO,
        ))
        .emit_strategy(EmitStrategy::on_window_close())
        .count_with(Materialized::as_(COUNTS).with_retention(Duration::from_secs(3_600)))
        .to_stream()
        .to(
            OUTPUT,
            Produced::with(
                Serdes::time_windowed(Serdes::string(), WINDOW_MS),
                Serdes::i64(),
            ),
        );
    let _totals = clicks.group_by_key().count_with(Materialized::as_(TOTALS));
    b.build().expect("a valid topology")
}

/// The status and the compact JSON body of `GET path`.
fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let status = raw[9..12].parse().unwrap();
    let body = raw.split_once("\r\n\r\n").unwrap().1;
    (status, body.to_owned())
}

/// How many times `field` appears in `body`.
fn count(body: &str, field: &str) -> usize {
    body.matches(field).count()
}

#[test]
fn the_store_routes_answer_committed_values_and_window_finality() {
    let config = ConfigLoader::new()
        .map([
            ("application.id", "store-routes"),
            ("stoatflow.backend", "memory"),
            ("runtime.endpoints.listen", "127.0.0.1:0"),
        ])
        .build()
        .unwrap();
    let mut app = App::from_config(topology(), &config).unwrap();
    let App::Embedded(inner) = &app else {
        panic!("the memory backend is the embedded log")
    };
    let log = inner.log().clone();
    topics(&app);
    produce(&*log);
    app.start().unwrap();
    assert!(app.wait_until_caught_up(Duration::from_secs(60)).unwrap());
    let stores = QueryableStores::new()
        .key_value::<String, i64>(TOTALS)
        .window::<String, i64>(COUNTS);
    let bound = App::bind_endpoints(&config).unwrap().expect("enabled");
    let server = app.serve_endpoints_with(bound, &stores).unwrap();
    let addr = server.local_addr();

    let (status, list) = get(addr, "/stores");
    assert_eq!(status, 200);
    assert!(
        list.contains(&format!(r#"{{"kind":"keyValue","name":"{TOTALS}"}}"#)),
        "{list}"
    );
    assert!(
        list.contains(&format!(r#"{{"kind":"window","name":"{COUNTS}"}}"#)),
        "{list}"
    );

    let (status, total) = get(addr, &format!("/stores/{TOTALS}/keys/k0"));
    assert_eq!(status, 200, "{total}");
    assert!(
        total.contains(r#""key":"k0""#) && total.contains(r#""value":"15""#),
        "{total}"
    );
    assert!(total.contains(r#""committed":true"#), "{total}");
    assert!(
        total.contains(&format!(
            r#"{{"offset":31,"partition":0,"topic":"{INPUT}"}}"#
        )),
        "every input record is behind it: {total}"
    );

    // The far-ahead record closed every k0 window: the frontier follows
    // within a few barriers.
    let path = format!("/stores/{COUNTS}/keys/k0/windows");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let windows = loop {
        let (status, answer) = get(addr, &path);
        assert_eq!(status, 200, "{answer}");
        if count(&answer, r#""finality":"final""#) == 3 {
            break answer;
        }
        assert!(std::time::Instant::now() < deadline, "{answer}");
    };
    assert_eq!(count(&windows, r#""value":"5""#), 3, "{windows}");
    assert_eq!(count(&windows, r#""finality""#), 3, "{windows}");

    let (status, range) = get(addr, &format!("/stores/{TOTALS}/keys?limit=2"));
    assert_eq!(status, 200);
    let end = range.find(r#""key":"end""#).expect("end first");
    let k0 = range.find(r#""key":"k0""#).expect("then k0");
    assert!(end < k0 && !range.contains(r#""key":"k1""#), "{range}");
    assert!(range.contains(r#""truncated":true"#), "{range}");

    let (status, wrong) = get(addr, &format!("/stores/{TOTALS}/keys/k0/windows"));
    assert_eq!(status, 400);
    assert!(wrong.contains(TOTALS), "{wrong}");
    let (status, missing) = get(addr, "/stores/nope/keys/k0");
    assert_eq!(status, 404);
    assert!(missing.contains("nope"), "{missing}");
    server.shutdown();
    assert!(app.close(Duration::from_secs(30)));
}
