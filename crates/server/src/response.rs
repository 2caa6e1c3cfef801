//! [`Response`] and [`Encoded`]: what the listener answers, and the same
//! answer as the bytes that go on the wire (status line, headers, body),
//! encoded once and shared by every request it answers.
//!
//! Owns the status line, the headers every response carries and the
//! `HEAD` rule (the head without the body). Knows nothing of routes or of
//! the application.

use std::sync::Arc;

use serde_json::Value;

/// A response: status, content type and body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    pub(crate) body: String,
    /// `Allow`'s methods, on a 405.
    pub(crate) allow: Option<&'static str>,
}

impl Response {
    pub(crate) fn json(status: u16, body: &Value) -> Self {
        Response {
            status,
            content_type: "application/json",
            body: body.to_string(),
            allow: None,
        }
    }

    pub(crate) fn text(content_type: &'static str, body: String) -> Self {
        Response {
            status: 200,
            content_type,
            body,
            allow: None,
        }
    }

    /// The bytes on the wire.
    pub(crate) fn encode(&self) -> Arc<Encoded> {
        let reason = match self.status {
            200 => "OK",
            400 => "Bad Request",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            413 => "Content Too Large",
            431 => "Request Header Fields Too Large",
            503 => "Service Unavailable",
            _ => "",
        };
        let allow = match self.allow {
            Some(methods) => format!("Allow: {methods}\r\n"),
            None => String::new(),
        };
        let mut bytes = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n{allow}Connection: close\r\n\r\n",
            self.status,
            self.content_type,
            self.body.len()
        )
        .into_bytes();
        let head_len = bytes.len();
        bytes.extend_from_slice(self.body.as_bytes());
        Arc::new(Encoded { bytes, head_len })
    }
}

/// A response as bytes: head and body, encoded once.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Encoded {
    bytes: Vec<u8>,
    head_len: usize,
}

impl Encoded {
    /// What to send: the whole response, or its head alone (`HEAD`).
    pub(crate) fn wire(&self, head_only: bool) -> &[u8] {
        if head_only {
            &self.bytes[..self.head_len]
        } else {
            &self.bytes
        }
    }

    /// The status code (tests).
    #[cfg(test)]
    pub(crate) fn status(&self) -> u16 {
        self.head()
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0)
    }

    /// The head as text (tests).
    #[cfg(test)]
    pub(crate) fn head(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.head_len]).unwrap_or("")
    }

    /// The body as text (tests).
    #[cfg(test)]
    pub(crate) fn body(&self) -> &str {
        std::str::from_utf8(&self.bytes[self.head_len..]).unwrap_or("")
    }

    /// The body as JSON (tests).
    #[cfg(test)]
    pub(crate) fn json_body(&self) -> Value {
        serde_json::from_str(self.body()).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_only_sends_the_head_with_the_full_content_length() {
        let e = Response::text("text/plain", "hello".into()).encode();
        assert_eq!(e.status(), 200);
        assert!(e.head().contains("Content-Length: 5\r\n"), "{}", e.head());
        assert!(e.head().ends_with("\r\n\r\n"));
        assert_eq!(e.body(), "hello");
        assert_eq!(e.wire(true), e.head().as_bytes());
        assert!(e.wire(false).ends_with(b"\r\n\r\nhello"));
    }
}
