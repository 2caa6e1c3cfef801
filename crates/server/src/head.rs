//! The header fields of a request head, as far as the listener reads
//! them: HTTP/1.1's `Host` rule (RFC 9112, section 3.2), and the body's
//! length. A request of HTTP/1.1 without a `Host` field, with more than
//! one, or with a value that is not `host[:port]` is refused (400); the
//! value itself is never used, since every route answers the same whatever
//! name it was reached by. A body is read only as `Content-Length` gives
//! it ([`body_length`]): a `Transfer-Encoding` or a length that is not one
//! number is refused. Every other field is ignored.
//!
//! Owns the reading of the field lines; knows nothing of routes, sockets
//! or responses.

/// What is wrong with the `Host` fields among `fields` (the head's lines
/// after the request line), if anything.
pub(crate) fn host_problem(fields: &[u8]) -> Option<&'static str> {
    let mut hosts = 0;
    let mut last_was_host = false;
    for line in fields.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        if line[0] == b' ' || line[0] == b'\t' {
            // A line folded onto the field before it.
            if last_was_host {
                return Some("a Host header field folded over lines");
            }
            continue;
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            last_was_host = false;
            continue;
        };
        last_was_host = line[..colon].eq_ignore_ascii_case(b"host");
        if !last_was_host {
            continue;
        }
        hosts += 1;
        if !host_value(line[colon + 1..].trim_ascii()) {
            return Some("a Host header field that is not host[:port]");
        }
    }
    match hosts {
        0 => Some("an HTTP/1.1 request without a Host header field"),
        1 => None,
        _ => Some("more than one Host header field"),
    }
}

/// The field lines of `fields` up to the blank line, as (name, value).
fn field_lines(fields: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    fields
        .split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .take_while(|line| !line.is_empty())
        .filter_map(|line| {
            let colon = line.iter().position(|&b| b == b':')?;
            Some((&line[..colon], line[colon + 1..].trim_ascii()))
        })
}

/// The length of the body that follows a head with `fields`: 0 without a
/// `Content-Length`; the reason it cannot be read otherwise (a
/// `Transfer-Encoding`, a length that is not a number, two that differ).
/// A length too large for memory saturates (the caller's bound refuses it).
pub(crate) fn body_length(fields: &[u8]) -> Result<usize, &'static str> {
    let mut length = None;
    for (name, value) in field_lines(fields) {
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            return Err("a body in a Transfer-Encoding (send it with a Content-Length)");
        }
        if !name.eq_ignore_ascii_case(b"content-length") {
            continue;
        }
        if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
            return Err("a Content-Length that is not a number");
        }
        let n = std::str::from_utf8(value)
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(usize::MAX);
        if length.is_some_and(|l| l != n) {
            return Err("two Content-Length fields that differ");
        }
        length = Some(n);
    }
    Ok(length.unwrap_or(0))
}

/// Whether `value` may be a `host[:port]`: the characters of a URI's host
/// (a name, an IPv4 address or a bracketed IPv6 one) and a colon. Empty
/// is allowed (a target without an authority).
fn host_value(value: &[u8]) -> bool {
    value
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=:[]".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_host_field_with_a_host_and_port_passes() {
        for fields in [
            &b"Host: example.com\r\n\r\n"[..],
            b"host:127.0.0.1:8080\r\nAccept: */*\r\n",
            b"User-Agent: kube-probe/1.31\r\nHOST: [::1]:8080\r\n\r\nbody",
            b"Host:\r\n",
            b"Host: x\n\n",
        ] {
            assert_eq!(
                host_problem(fields),
                None,
                "{:?}",
                String::from_utf8_lossy(fields)
            );
        }
    }

    #[test]
    fn a_body_length_comes_from_one_content_length_only() {
        assert_eq!(body_length(b"Host: x\r\n\r\n"), Ok(0));
        assert_eq!(body_length(b"content-length: 12\r\n\r\n"), Ok(12));
        assert_eq!(
            body_length(b"Content-Length: 3\r\nContent-Length: 3\r\n"),
            Ok(3)
        );
        assert_eq!(
            body_length(b"Content-Length: 99999999999999999999999\r\n"),
            Ok(usize::MAX)
        );
        assert_eq!(
            body_length(b"\r\nContent-Length: 5\r\n"),
            Ok(0),
            "after the head"
        );
        for (fields, want) in [
            (&b"Transfer-Encoding: chunked\r\n"[..], "Transfer-Encoding"),
            (b"Content-Length: -1\r\n", "not a number"),
            (b"Content-Length: 1 2\r\n", "not a number"),
            (b"Content-Length:\r\n", "not a number"),
            (b"Content-Length: 1\r\nContent-Length: 2\r\n", "differ"),
        ] {
            let got = body_length(fields).unwrap_err();
            assert!(got.contains(want), "{got}");
        }
    }

    #[test]
    fn a_missing_repeated_folded_or_invalid_host_is_named() {
        let cases: [(&[u8], &str); 7] = [
            (b"", "without a Host"),
            (
                b"Accept: */*\r\n\r\nHost: after-the-head\r\n",
                "without a Host",
            ),
            (b"X-Host: a\r\nHost : spaced\r\n", "without a Host"),
            (b"Host: a\r\nHost: b\r\n", "more than one"),
            (b"Host: a\r\n b\r\n", "folded"),
            (b"Host: a b\r\n", "not host[:port]"),
            (b"Host: a/b\r\n", "not host[:port]"),
        ];
        for (fields, want) in cases {
            let got = host_problem(fields).unwrap_or("");
            assert!(
                got.contains(want),
                "{:?}: {got:?}",
                String::from_utf8_lossy(fields)
            );
        }
    }
}
