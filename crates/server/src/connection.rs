//! [`Connection`]: one accepted connection on a non-blocking socket, moved
//! forward a step at a time by the listener's loop: read a bounded request
//! head and the body its `Content-Length` announces (bounded too), wait for
//! its answer, write it, close.
//!
//! A connection never blocks the listener: a client that sends nothing, or
//! reads slowly, holds one of the listener's connection slots until its
//! deadline (or, still without a request, until the listener sheds it for
//! a newcomer), never the thread. Owns the request head's bound (431 past
//! 8 KiB), the body's ([`MAX_BODY`]: a larger one is answered 413 without
//! being read), the deadline and the orderly close (after a cut-off head or
//! an unread body, the write side shut first, then whatever the client
//! still sends read and dropped for a moment, so the answer is not lost to
//! a reset). Knows nothing of routes.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::head::body_length;
use crate::response::Encoded;

/// Largest request head read (request line and headers).
pub(crate) const MAX_HEAD: usize = 8 * 1024;
/// Largest request body read (the log routes' appends).
pub const MAX_BODY: usize = 1 << 20;
/// How long the close waits for the client to finish sending.
const DRAIN: Duration = Duration::from_millis(100);
/// The most bytes read and dropped while closing.
const DRAIN_BUDGET: usize = 1 << 20;

/// What a complete request head says, for the router.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Incoming<'a> {
    /// A head that ended.
    Head {
        /// The request line (without its line end).
        line: &'a [u8],
        /// The header field lines after it.
        fields: &'a [u8],
        /// The body, as long as its `Content-Length` said.
        body: &'a [u8],
    },
    /// The head passed [`MAX_HEAD`] without ending.
    TooLarge,
    /// A body that was not read.
    BadBody(BodyProblem),
}

/// Why a request's body was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyProblem {
    /// Its `Content-Length` is past [`MAX_BODY`].
    TooLarge,
    /// Its length is not given as one `Content-Length` (the reason).
    Length(&'static str),
    /// The client stopped sending before the body's end.
    Short,
}

/// What cut a request short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    Head,
    Body(BodyProblem),
}

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Nothing could move; try again later.
    Idle,
    /// Bytes moved.
    Moved,
    /// A complete request waits for [`Connection::respond`].
    Ready,
    /// Finished, abandoned or past its deadline: drop it.
    Done,
}

#[derive(Debug)]
enum Phase {
    Reading,
    Ready {
        cut: Option<Cut>,
    },
    Writing {
        reply: Arc<Encoded>,
        head_only: bool,
        sent: usize,
        /// The client may still be sending (its head was cut off).
        linger: bool,
    },
    Closing {
        until: Instant,
        budget: usize,
    },
}

/// One accepted connection.
#[derive(Debug)]
pub(crate) struct Connection {
    stream: TcpStream,
    /// The client's address (unspecified if the socket could not say).
    peer: IpAddr,
    deadline: Instant,
    /// The bytes read: the head, then the body.
    head: Vec<u8>,
    /// Where the head ends in `head` and how long its body is, once known.
    framing: Option<(usize, usize)>,
    phase: Phase,
}

impl Connection {
    /// `stream`, made non-blocking, to be finished by `deadline`.
    pub(crate) fn new(stream: TcpStream, deadline: Instant) -> std::io::Result<Self> {
        stream.set_nonblocking(true)?;
        let peer = stream
            .peer_addr()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |a| a.ip());
        Ok(Connection {
            stream,
            peer,
            deadline,
            head: Vec::new(),
            framing: None,
            phase: Phase::Reading,
        })
    }

    /// Moves the connection on as far as its socket allows now.
    pub(crate) fn step(&mut self, now: Instant) -> Step {
        match &self.phase {
            Phase::Closing { until, .. } if now >= *until => return Step::Done,
            Phase::Closing { .. } => {}
            _ if now >= self.deadline => return Step::Done,
            _ => {}
        }
        match self.phase {
            Phase::Reading => self.read_head(),
            Phase::Ready { .. } => Step::Ready,
            Phase::Writing { .. } => self.write(now),
            Phase::Closing { .. } => self.drain(),
        }
    }

    /// The client's address.
    pub(crate) fn peer(&self) -> IpAddr {
        self.peer
    }

    /// Whether its request head is still being read (the connection may be
    /// shed for a newcomer: nothing was asked of the listener yet).
    pub(crate) fn awaits_request(&self) -> bool {
        matches!(self.phase, Phase::Reading)
    }

    /// The complete request (only after [`Step::Ready`]).
    pub(crate) fn request(&self) -> Incoming<'_> {
        match self.phase {
            Phase::Ready {
                cut: Some(Cut::Head),
            } => Incoming::TooLarge,
            Phase::Ready {
                cut: Some(Cut::Body(problem)),
            } => Incoming::BadBody(problem),
            _ => match self.framing {
                Some((end, len)) => match split_head(&self.head[..end]) {
                    Incoming::Head { line, fields, .. } => Incoming::Head {
                        line,
                        fields,
                        body: &self.head[end..end + len],
                    },
                    other => other,
                },
                None => split_head(&self.head),
            },
        }
    }

    /// Answers the request with `reply` (its head alone for `HEAD`).
    pub(crate) fn respond(&mut self, reply: Arc<Encoded>, head_only: bool) {
        let linger = matches!(self.phase, Phase::Ready { cut: Some(_) });
        self.head = Vec::new();
        self.phase = Phase::Writing {
            reply,
            head_only,
            sent: 0,
            linger,
        };
    }

    fn read_head(&mut self) -> Step {
        let mut buf = [0u8; 8192];
        let mut moved = false;
        loop {
            match (&self.stream).read(&mut buf) {
                Ok(0) if self.head.is_empty() => return Step::Done,
                // The client finished sending: what came is the head.
                Ok(0) if self.framing.is_none() => return self.ready(None),
                Ok(0) => return self.ready(Some(Cut::Body(BodyProblem::Short))),
                Ok(n) => {
                    moved = true;
                    let scan_from = self.head.len().saturating_sub(3);
                    self.head.extend_from_slice(&buf[..n]);
                    if self.framing.is_none() {
                        match head_end(&self.head[scan_from..]) {
                            Some(end) => {
                                if let Some(cut) = self.frame(scan_from + end) {
                                    return self.ready(Some(cut));
                                }
                            }
                            None if self.head.len() > MAX_HEAD => {
                                return self.ready(Some(Cut::Head));
                            }
                            None => continue,
                        }
                    }
                    if let Some((end, len)) = self.framing
                        && self.head.len() >= end + len
                    {
                        return self.ready(None);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    return if moved { Step::Moved } else { Step::Idle };
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Step::Done,
            }
        }
    }

    /// Records where the head ending at `end` ends and how long its body
    /// is; what cuts the request short, if anything.
    fn frame(&mut self, end: usize) -> Option<Cut> {
        if end > MAX_HEAD {
            return Some(Cut::Head);
        }
        let Incoming::Head { fields, .. } = split_head(&self.head[..end]) else {
            return Some(Cut::Head);
        };
        match body_length(fields) {
            Err(reason) => Some(Cut::Body(BodyProblem::Length(reason))),
            Ok(len) if len > MAX_BODY => Some(Cut::Body(BodyProblem::TooLarge)),
            Ok(len) => {
                self.framing = Some((end, len));
                None
            }
        }
    }

    fn ready(&mut self, cut: Option<Cut>) -> Step {
        self.phase = Phase::Ready { cut };
        Step::Ready
    }

    fn write(&mut self, now: Instant) -> Step {
        let Phase::Writing {
            reply,
            head_only,
            sent,
            linger,
        } = &mut self.phase
        else {
            return Step::Done;
        };
        let wire = reply.wire(*head_only);
        let mut moved = false;
        while *sent < wire.len() {
            match (&self.stream).write(&wire[*sent..]) {
                Ok(0) => return Step::Done,
                Ok(n) => {
                    *sent += n;
                    moved = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    return if moved { Step::Moved } else { Step::Idle };
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Step::Done,
            }
        }
        // Closing with unread input resets the connection, which can lose
        // the response on its way: when the head or body was cut off, shut the
        // write side and read what the client still sends until it closes
        // (briefly). A complete head was read whole: close at once.
        if !*linger || self.stream.shutdown(Shutdown::Write).is_err() {
            return Step::Done;
        }
        self.phase = Phase::Closing {
            until: now + DRAIN,
            budget: DRAIN_BUDGET,
        };
        match self.drain() {
            Step::Done => Step::Done,
            _ => Step::Moved,
        }
    }

    fn drain(&mut self) -> Step {
        let Phase::Closing { budget, .. } = &mut self.phase else {
            return Step::Done;
        };
        let mut buf = [0u8; 2048];
        let mut moved = false;
        loop {
            match (&self.stream).read(&mut buf) {
                Ok(0) => return Step::Done,
                Ok(n) if n >= *budget => return Step::Done,
                Ok(n) => {
                    *budget -= n;
                    moved = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    return if moved { Step::Moved } else { Step::Idle };
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Step::Done,
            }
        }
    }
}

/// A head as read (the request line, the field lines, and whatever the
/// client sent after them) split into its request line and field lines.
pub(crate) fn split_head(head: &[u8]) -> Incoming<'_> {
    let end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    let line = &head[..end];
    Incoming::Head {
        line: line.strip_suffix(b"\r").unwrap_or(line),
        fields: head.get(end + 1..).unwrap_or_default(),
        body: &[],
    }
}

/// Where the blank line that ends a head ends in `bytes`, if it is there.
pub(crate) fn head_end(bytes: &[u8]) -> Option<usize> {
    let crlf = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4);
    let lf = bytes.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    crlf.into_iter().chain(lf).min()
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;

    /// A client socket and the server's connection of it.
    fn pair() -> (TcpStream, Connection) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let c = Connection::new(server, Instant::now() + Duration::from_secs(30)).unwrap();
        (client, c)
    }

    /// Steps `c` until its request is complete (polled, with a deadline).
    fn until_ready(c: &mut Connection) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match c.step(Instant::now()) {
                Step::Ready => return,
                Step::Done => panic!("the connection ended before its request"),
                _ => {}
            }
            assert!(Instant::now() < deadline, "no complete request in time");
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_body_is_read_whole_and_only_as_long_as_its_content_length() {
        let (mut client, mut c) = pair();
        client
            .write_all(b"POST /log/records HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123")
            .unwrap();
        // The head and part of the body: not a request yet, however often
        // stepped while the rest is on its way.
        for _ in 0..100 {
            assert_ne!(c.step(Instant::now()), Step::Ready);
        }
        client.write_all(b"456789extra").unwrap();
        until_ready(&mut c);
        let Incoming::Head { line, body, .. } = c.request() else {
            panic!("{:?}", c.request());
        };
        assert_eq!(line, b"POST /log/records HTTP/1.1");
        assert_eq!(body, b"0123456789");
    }

    #[test]
    fn a_body_past_the_bound_or_cut_short_is_not_a_request() {
        let (mut client, mut c) = pair();
        let head = format!(
            "POST /log/records HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY + 1
        );
        client.write_all(head.as_bytes()).unwrap();
        until_ready(&mut c);
        assert_eq!(c.request(), Incoming::BadBody(BodyProblem::TooLarge));
        let (mut client, mut c) = pair();
        client
            .write_all(b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc")
            .unwrap();
        client.shutdown(Shutdown::Write).unwrap();
        until_ready(&mut c);
        assert_eq!(c.request(), Incoming::BadBody(BodyProblem::Short));
        let (mut client, mut c) = pair();
        client
            .write_all(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc")
            .unwrap();
        until_ready(&mut c);
        assert!(matches!(
            c.request(),
            Incoming::BadBody(BodyProblem::Length(_))
        ));
    }

    #[test]
    fn the_blank_line_ends_a_head_with_either_line_end() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nbody"), Some(27));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\n"), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n"), None);
        assert_eq!(head_end(b"\r\n\r"), None);
    }
}
