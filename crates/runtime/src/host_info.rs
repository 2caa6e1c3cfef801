//! [`HostInfo`]: the `host:port` an instance advertises as its
//! `application.server` (Kafka Streams' `HostInfo`), parsed and checked.
//!
//! A leaf: the settings check a configured value with it, and key metadata
//! names instances by it. Knows nothing of groups, sockets or HTTP.

use std::fmt;

/// Where an instance's interactive queries are served: a host and a port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostInfo {
    /// A host name, an IPv4 address, or an IPv6 address in brackets.
    pub host: String,
    /// The port.
    pub port: u16,
}

impl HostInfo {
    /// Parses `host:port` (`[v6]:port` for an IPv6 address).
    ///
    /// # Errors
    /// Why `text` is not one: no port, a port that is not 1..=65535, an
    /// empty host, or a host with characters no host name has.
    pub fn parse(text: &str) -> Result<Self, String> {
        let Some((host, port)) = text.rsplit_once(':') else {
            return Err("must be host:port (no ':' before a port)".into());
        };
        let port = match port.parse::<u16>() {
            Ok(p) if p > 0 => p,
            _ => return Err(format!("port {port:?} is not an integer from 1 to 65535")),
        };
        let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_');
        let ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            Some(v6) => !v6.is_empty() && v6.chars().all(|c| c.is_ascii_hexdigit() || c == ':'),
            None => !host.is_empty() && host.chars().all(plain),
        };
        if !ok {
            return Err(format!(
                "host {host:?} must be a host name or address (letters, digits, '.', '-', '_'; \
                 an IPv6 address in brackets)"
            ));
        }
        Ok(HostInfo {
            host: host.to_owned(),
            port,
        })
    }
}

impl fmt::Display for HostInfo {
    /// `host:port`, as parsed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_and_port_round_trip() {
        for text in [
            "localhost:8080",
            "10.0.0.7:1",
            "[::1]:65535",
            "node-3.example_x:80",
        ] {
            assert_eq!(HostInfo::parse(text).unwrap().to_string(), text);
        }
    }

    #[test]
    fn bad_values_say_what_is_wrong() {
        let cases = [
            ("localhost", "no ':'"),
            ("localhost:0", "port \"0\""),
            ("localhost:http", "port \"http\""),
            (":8080", "host \"\""),
            ("my host:8080", "host \"my host\""),
            ("[]:80", "host \"[]\""),
            ("::1:80", "host \"::1\""),
        ];
        for (text, said) in cases {
            let err = HostInfo::parse(text).unwrap_err();
            assert!(err.contains(said), "{text}: {err}");
        }
    }
}
