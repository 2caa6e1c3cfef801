//! [`Connection`]: one accepted connection on a non-blocking socket, moved
//! forward a step at a time by the listener's loop: read a bounded request
//! head, wait for its answer, write it, close.
//!
//! A connection never blocks the listener: a client that sends nothing, or
//! reads slowly, holds one of the listener's connection slots until its
//! deadline (or, still without a request, until the listener sheds it for
//! a newcomer), never the thread. Owns the request head's bound (431 past
//! 8 KiB), the deadline and the orderly close (after a cut-off head, the
//! write side shut first, then whatever the client still sends read and
//! dropped for a moment, so the 431 is not lost to a reset). Knows nothing
//! of routes.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::response::Encoded;

/// Largest request head read (request line and headers).
pub(crate) const MAX_HEAD: usize = 8 * 1024;
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
    },
    /// The head passed [`MAX_HEAD`] without ending.
    TooLarge,
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
        too_large: bool,
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
    head: Vec<u8>,
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
            Phase::Ready { too_large: true } => Incoming::TooLarge,
            _ => split_head(&self.head),
        }
    }

    /// Answers the request with `reply` (its head alone for `HEAD`).
    pub(crate) fn respond(&mut self, reply: Arc<Encoded>, head_only: bool) {
        let linger = matches!(self.phase, Phase::Ready { too_large: true });
        self.head = Vec::new();
        self.phase = Phase::Writing {
            reply,
            head_only,
            sent: 0,
            linger,
        };
    }

    fn read_head(&mut self) -> Step {
        let mut buf = [0u8; 2048];
        let mut moved = false;
        loop {
            match (&self.stream).read(&mut buf) {
                Ok(0) if self.head.is_empty() => return Step::Done,
                // The client finished sending: what came is the head.
                Ok(0) => return self.ready(false),
                Ok(n) => {
                    moved = true;
                    let scan_from = self.head.len().saturating_sub(3);
                    self.head.extend_from_slice(&buf[..n]);
                    if let Some(end) = head_end(&self.head[scan_from..]) {
                        return self.ready(scan_from + end > MAX_HEAD);
                    }
                    if self.head.len() > MAX_HEAD {
                        return self.ready(true);
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

    fn ready(&mut self, too_large: bool) -> Step {
        self.phase = Phase::Ready { too_large };
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
        // the response on its way: when the head was cut off, shut the
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
    use super::*;

    #[test]
    fn the_blank_line_ends_a_head_with_either_line_end() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nbody"), Some(27));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\n"), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n"), None);
        assert_eq!(head_end(b"\r\n\r"), None);
    }
}
