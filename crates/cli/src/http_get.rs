//! A minimal HTTP/1.1 GET over a std `TcpStream` for `http://host:port/path`
//! URLs: what `stoatflow watermarks` needs to read the endpoints, without an
//! HTTP client crate. Knows nothing of what the body means.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{Context, bail};

/// Status and body of `GET url`.
pub fn get(url: &str, timeout: Duration) -> anyhow::Result<(u16, String)> {
    let rest = url
        .strip_prefix("http://")
        .with_context(|| format!("{url}: only http:// URLs are supported"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr = authority
        .to_socket_addrs()
        .with_context(|| format!("{url}: cannot resolve {authority}"))?
        .next()
        .with_context(|| format!("{url}: {authority} resolves to no address"))?;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)
        .with_context(|| format!("cannot connect to {authority}"))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .with_context(|| format!("reading the answer of {url}"))?;
    let text = String::from_utf8_lossy(&raw);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        bail!("{url}: the answer has no HTTP header end");
    };
    let status = head
        .lines()
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .with_context(|| format!("{url}: no HTTP status line in the answer"))?;
    Ok((status, body.to_owned()))
}
