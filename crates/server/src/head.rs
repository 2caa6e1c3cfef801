//! The header fields of a request head, as far as the listener reads
//! them: HTTP/1.1's `Host` rule (RFC 9112, section 3.2). A request of
//! HTTP/1.1 without a `Host` field, with more than one, or with a value
//! that is not `host[:port]` is refused (400); the value itself is never
//! used, since every route answers the same whatever name it was reached
//! by. Every other field is ignored.
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
