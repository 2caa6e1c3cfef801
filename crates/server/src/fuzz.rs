//! Fuzz target of the request parsing of the operating surface: the bytes a
//! client sends, cut into a head where the listener cuts it ([`head_end`],
//! [`MAX_HEAD`]), split into request line and fields ([`split_head`]) and
//! answered by [`ServerState::answer`] (request line, `Host` rule, target,
//! query). Every input gets one well-formed response with a status the
//! routing rules allow, never a panic.

use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use stoatflow_fuzzing::{Tier, fuzz, inputs};
use stoatflow_time::WatermarksSnapshot;

use crate::connection::{Incoming, MAX_HEAD, head_end, split_head};
use crate::endpoints::Endpoints;
use crate::history::WatermarkHistory;
use crate::metrics::RecordingLevel;
use crate::routing::ServerState;

#[derive(Debug)]
struct Running;

impl Endpoints for Running {
    fn watermarks(&self) -> Option<WatermarksSnapshot> {
        None
    }
    fn client_state(&self) -> (&'static str, u8) {
        ("RUNNING", 2)
    }
    fn application_id(&self) -> String {
        "app".into()
    }
}

/// What the listener makes of `bytes` sent before the client stops
/// sending: a head to answer, or nothing (no byte came).
fn incoming(bytes: &[u8]) -> Option<Incoming<'_>> {
    match head_end(bytes) {
        Some(end) if end > MAX_HEAD => Some(Incoming::TooLarge),
        Some(_) => Some(split_head(bytes)),
        None if bytes.len() > MAX_HEAD => Some(Incoming::TooLarge),
        None if bytes.is_empty() => None,
        None => Some(split_head(bytes)),
    }
}

const SEEDS: &[&[u8]] = &[
    b"GET /watermarks HTTP/1.1\r\nHost: localhost:8080\r\nAccept: */*\r\n\r\n",
    b"HEAD /health/readiness HTTP/1.1\r\nhost: [::1]:9\r\n\r\n",
    b"GET /watermarks/history?since=1700000000000 HTTP/1.0\n\n",
    b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody",
    b"GET /info?x=1#frag HTTP/1.1\r\nHost: a\r\n b\r\n\r\n",
];

const TOKENS: &[&[u8]] = &[
    b"\r\n",
    b"\n",
    b"\r\n\r\n",
    b" ",
    b"\t",
    b":",
    b"Host: ",
    b"HTTP/1.1",
    b"HTTP/",
    b"GET ",
    b"HEAD ",
    b"/watermarks",
    b"/watermarks/history",
    b"/metrics",
    b"/health",
    b"?since=",
    b"-9223372036854775809",
    b"%",
    b"%00",
    b"\xc3\x28",
    b"\xff\xfe",
    b"#",
    b"&",
    b"=",
];

/// Any bytes: nothing (none sent) or one response whose status the routing
/// rules allow, never a panic.
#[test]
fn request_heads_get_one_allowed_response() {
    let mut long = b"GET /".to_vec();
    long.extend(std::iter::repeat_n(b'a', MAX_HEAD));
    let mut seeds: Vec<Vec<u8>> = SEEDS.iter().map(|s| s.to_vec()).collect();
    seeds.push(long);
    let state = std::cell::RefCell::new(ServerState::new(
        Arc::new(Running),
        true,
        RecordingLevel::Info,
        WatermarkHistory::new(Duration::from_secs(1), Duration::from_secs(60)),
        Duration::ZERO,
    ));
    fuzz(
        module_path!(),
        "request_heads_get_one_allowed_response",
        // Each input is a whole request (or configuration) end to end.
        Tier {
            short: 2_000,
            heavy: 20_000,
        },
        inputs(seeds, TOKENS, 512),
        |bytes| {
            let Some(request) = incoming(&bytes) else {
                prop_assert!(bytes.is_empty());
                return Ok(());
            };
            let loopback = std::net::IpAddr::from([127, 0, 0, 1]);
            let (reply, head_only) = state.borrow_mut().answer(request, loopback, Instant::now());
            let status = reply.status();
            prop_assert!(
                [200, 400, 404, 405, 413, 431, 503].contains(&status),
                "status {}",
                status
            );
            let wire = reply.wire(head_only);
            prop_assert!(wire.starts_with(b"HTTP/1.1 "));
            prop_assert!(wire.windows(4).any(|w| w == b"\r\n\r\n"));
            Ok(())
        },
    );
}
