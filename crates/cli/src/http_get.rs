//! A minimal HTTP/1.1 client over a std `TcpStream` for
//! `http://host:port/path` URLs: a GET, what `stoatflow watermarks` needs
//! to read the endpoints, and a POST of a JSON body, what `stoatflow log`
//! needs to feed a running application, without an HTTP client crate.
//! Knows nothing of what the bodies mean.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{Context, bail};

/// Status and body of `GET url`.
pub fn get(url: &str, timeout: Duration) -> anyhow::Result<(u16, String)> {
    request("GET", url, None, timeout)
}

/// Status and body of `POST url` with the JSON `body`.
pub fn post_json(url: &str, body: &[u8], timeout: Duration) -> anyhow::Result<(u16, String)> {
    request("POST", url, Some(body), timeout)
}

fn request(
    method: &str,
    url: &str,
    body: Option<&[u8]>,
    timeout: Duration,
) -> anyhow::Result<(u16, String)> {
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
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nAccept: application/json\r\nConnection: close\r\n"
    );
    if let Some(body) = body {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    let mut wire = request.into_bytes();
    wire.extend_from_slice(body.unwrap_or_default());
    stream
        .write_all(&wire)
        .with_context(|| format!("sending the request to {url}"))?;
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
