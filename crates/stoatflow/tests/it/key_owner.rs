//! Two instances in a scripted group, each serving its store routes at the
//! `application.server` it advertises (docs/queries.md#over-http): a key
//! route on the instance that does not own the key answers 421 naming the
//! owner's endpoint, the owner answers it, and the metadata route names the
//! owner and the standby holder; with stale answers allowed, the standby
//! holder answers from its copy, saying so.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stoatflow::log::{GroupEvent, MemberAssignment, TopicPartition};
use stoatflow::server::{BoundListener, HttpServer};
use stoatflow::*;

use crate::hooked_log::HookedLog;
use crate::scripted_group::{Script, scripted_log};
use crate::support::INPUT;

const APP: &str = "key-owner";
const TOTALS: &str = "totals";

fn topology() -> Topology {
    let mut b = StreamsBuilder::new();
    let _ = b
        .stream(INPUT, Consumed::with(Serdes::string(), Serdes::string()))
        .group_by_key()
        .count_with(Materialized::as_(TOTALS));
    b.build().unwrap()
}

/// Instance `id` advertising the address `bound` listens on, its store
/// routes served there.
fn instance(
    log: &Arc<HookedLog<Script>>,
    id: &str,
    state: &Path,
    bound: BoundListener,
) -> (StreamsApp<HookedLog<Script>>, HttpServer) {
    let mut config = RuntimeConfig::new(APP, Backend::InMemory)
        .with_lanes(1)
        .with_state_dir(state)
        .with_standby_replicas(1)
        .with_application_server(bound.local_addr().to_string());
    config.instance_id = id.into();
    let mut app = StreamsApp::with_log(topology(), config, log.clone()).unwrap();
    app.start().unwrap();
    let stores = QueryableStores::new().key_value::<String, i64>(TOTALS);
    let server = bound
        .stores(stores.access(app.handle()))
        .serve(Arc::new(app.handle()))
        .unwrap();
    (app, server)
}

fn bind() -> BoundListener {
    HttpServer::builder()
        .listen("127.0.0.1:0".parse().unwrap())
        .bind()
        .unwrap()
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

/// A key holder as the metadata route writes it (keys in order).
fn holder(member: &str, server: SocketAddr, local: bool) -> String {
    format!(r#"{{"local":{local},"member":"{member}","server":"{server}"}}"#)
}

#[test]
fn a_key_owned_elsewhere_is_answered_with_where_to_ask() {
    let (_inner, group, log) = scripted_log();
    let (a, b) = (format!("{APP}-a"), format!("{APP}-b"));
    let owns = |p: u32| vec![TopicPartition::new(INPUT, p)];
    group.describe(vec![
        MemberAssignment {
            member: a.clone(),
            partitions: owns(0),
        },
        MemberAssignment {
            member: b.clone(),
            partitions: owns(1),
        },
    ]);
    group.push(&a, GroupEvent::Assigned(owns(0)));
    group.push(&b, GroupEvent::Assigned(owns(1)));
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (bound_a, bound_b) = (bind(), bind());
    let (addr_a, addr_b) = (bound_a.local_addr(), bound_b.local_addr());
    let (mut app_a, server_a) = instance(&log, "a", dir_a.path(), bound_a);
    let (mut app_b, server_b) = instance(&log, "b", dir_b.path(), bound_b);
    let deadline = Instant::now() + Duration::from_secs(60);
    while app_a.state() != AppState::Running || app_b.state() != AppState::Running {
        assert!(Instant::now() < deadline, "the instances never ran");
        std::thread::sleep(Duration::from_millis(10));
    }

    // A key of partition 1, which b owns.
    let key = (0..)
        .map(|i| format!("user{i}"))
        .find(|k| partition_for_key(k.as_bytes(), 2) == 1)
        .unwrap();
    let path = format!("/stores/{TOTALS}/keys/{key}");
    let (status, body) = get(addr_a, &path);
    assert_eq!(status, 421, "{body}");
    for field in [
        format!(r#""owner":"{addr_b}""#),
        format!(r#""member":"{b}""#),
        r#""partition":1"#.to_owned(),
    ] {
        assert!(body.contains(&field), "{field} in {body}");
    }
    let (status, body) = get(addr_b, &path);
    assert_eq!(status, 200, "the owner answers: {body}");
    // Stale answers allowed, a answers from its standby copy of the task.
    let (status, body) = get(addr_a, &format!("{path}?stale=true"));
    assert_eq!(status, 200, "the standby holder answers: {body}");
    for field in [
        r#""source":"standby","task":"0_1""#.to_owned(),
        format!(r#""topic":"{APP}-{TOTALS}-changelog""#),
    ] {
        assert!(body.contains(&field), "{field} in {body}");
    }

    for (asker, local_is_owner) in [(addr_a, false), (addr_b, true)] {
        let (status, body) = get(asker, &format!("/stores/{TOTALS}/metadata/{key}"));
        assert_eq!(status, 200, "{body}");
        let active = holder(&b, addr_b, local_is_owner);
        let standby = holder(&a, addr_a, !local_is_owner);
        for field in [
            format!(r#""active":{active}"#),
            format!(r#""standbys":[{standby}]"#),
            r#""partition":1"#.to_owned(),
        ] {
            assert!(body.contains(&field), "{field} in {body}");
        }
    }
    server_a.shutdown();
    server_b.shutdown();
    assert!(app_a.close(Duration::from_secs(30)));
    assert!(app_b.close(Duration::from_secs(30)));
}
