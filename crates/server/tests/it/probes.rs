//! The probes keep being answered whatever other clients hold, over
//! loopback: connections that send nothing, or trickle a head that never
//! ends, are shed (the oldest first) when a newcomer needs their slot, and
//! a connection whose request is complete is never shed.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use stoatflow_server::HttpServer;

struct Running;

impl stoatflow_server::Endpoints for Running {
    fn watermarks(&self) -> Option<stoatflow_time::WatermarksSnapshot> {
        None
    }
    fn client_state(&self) -> (&'static str, u8) {
        ("RUNNING", 4)
    }
    fn application_id(&self) -> String {
        "probed".into()
    }
}

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// Sends `request` on a new connection; the answer's status if the whole
/// answer came within `within`.
fn answered_within(addr: SocketAddr, request: &str, within: Duration) -> Option<u16> {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).ok()?;
    s.write_all(request.as_bytes()).ok()?;
    let mut response = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = within.checked_sub(started.elapsed())?;
        s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .ok()?;
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => response.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    if started.elapsed() > within {
        return None;
    }
    String::from_utf8_lossy(&response)
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Whether the listener closed `s` (it reads end of stream), waiting at
/// most `within`.
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut byte = [0u8; 1];
    match s.read(&mut byte) {
        Ok(0) => true,
        Err(e) => matches!(e.kind(), ErrorKind::ConnectionReset),
        Ok(_) => panic!("a silent client was sent bytes"),
    }
}

/// Whether `s` is still open with nothing to read, now.
fn open_now(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let open = matches!((&*s).read(&mut byte), Err(e) if e.kind() == ErrorKind::WouldBlock);
    s.set_nonblocking(false).unwrap();
    open
}

#[test]
fn liveness_is_answered_within_a_second_past_64_idle_and_64_trickling_connections() {
    // The defaults: 32 connections, 5 s to finish a request.
    let server = HttpServer::builder()
        .listen(loopback())
        .start(Arc::new(Running))
        .unwrap();
    let addr = server.local_addr();
    let idle: Vec<TcpStream> = (0..64).map(|_| TcpStream::connect(addr).unwrap()).collect();
    let mut trickling: Vec<TcpStream> =
        (0..64).map(|_| TcpStream::connect(addr).unwrap()).collect();
    for s in &mut trickling {
        s.write_all(b"GET /health/liveness HTTP/1.1\r\nX-Slow: ")
            .unwrap();
    }
    // The tricklers send one byte each every 50 ms and never end the head.
    let (stop, stopped) = channel::<()>();
    let trickler = std::thread::spawn(move || {
        loop {
            for s in &mut trickling {
                // A shed connection refuses the byte: that is expected.
                let _ = s.write_all(b"a");
            }
            match stopped.recv_timeout(Duration::from_millis(50)) {
                Err(RecvTimeoutError::Timeout) => {}
                _ => return trickling,
            }
        }
    });
    let answers: Vec<Option<u16>> = (0..10)
        .map(|_| {
            answered_within(
                addr,
                "GET /health/liveness HTTP/1.1\r\nHost: kubelet\r\n\r\n",
                Duration::from_secs(1),
            )
        })
        .collect();
    stop.send(()).unwrap();
    let trickling = trickler.join().unwrap();
    assert_eq!(
        answers,
        vec![Some(200); 10],
        "every probe answered 200 within 1 s"
    );
    drop((idle, trickling));
}

#[test]
fn past_its_cap_the_listener_sheds_the_oldest_connection_without_a_request() {
    let server = HttpServer::builder()
        .listen(loopback())
        .max_connections(2)
        .request_timeout(Duration::from_secs(30))
        .start(Arc::new(Running))
        .unwrap();
    let addr = server.local_addr();
    let mut silent: Vec<TcpStream> = (0..10).map(|_| TcpStream::connect(addr).unwrap()).collect();
    // Each newcomer took the slot of the oldest silent one: the first
    // eight are closed, long before their 30 s...
    for (i, s) in silent.iter_mut().take(8).enumerate() {
        assert!(closed_within(s, Duration::from_secs(10)), "silent {i} shed");
    }
    // ...and the two newest hold the two slots.
    assert!(silent[8..].iter().all(open_now), "the newest two are held");
    // A request is answered: it takes the place of the oldest silent one.
    assert_eq!(
        answered_within(
            addr,
            "GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
            Duration::from_secs(10)
        ),
        Some(200)
    );
    assert!(closed_within(&mut silent[8], Duration::from_secs(10)));
    assert!(open_now(&silent[9]));
}

#[test]
fn a_connection_whose_request_is_complete_is_never_shed() {
    // Two slots, two answers a second: requests wait for their turn.
    let server = HttpServer::builder()
        .listen(loopback())
        .max_connections(2)
        .max_requests_per_second(2)
        .request_timeout(Duration::from_secs(30))
        .start(Arc::new(Running))
        .unwrap();
    let addr = server.local_addr();
    let request = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_eq!(
        answered_within(addr, request, Duration::from_secs(10)),
        Some(200)
    );
    // Two requests wait for their turn, in both slots...
    let waiting: Vec<std::thread::JoinHandle<Option<u16>>> = (0..2)
        .map(|_| {
            std::thread::spawn(move || answered_within(addr, request, Duration::from_secs(20)))
        })
        .collect();
    // ...while twenty silent clients come: none takes their place.
    let silent: Vec<TcpStream> = (0..20).map(|_| TcpStream::connect(addr).unwrap()).collect();
    for w in waiting {
        assert_eq!(w.join().unwrap(), Some(200));
    }
    drop(silent);
}
