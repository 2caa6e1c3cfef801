//! How a failed command's error prints: `Error: ` and the error, then each
//! cause on a line of its own, leaving out a cause whose words a line above
//! already says (a library error that shows its source in its own message
//! and also returns it as its source would otherwise print twice).
//!
//! Owns the rendering only; the messages are the libraries' and the
//! commands'.

/// The lines to print for `error`.
pub fn render(error: &anyhow::Error) -> String {
    let mut said: Vec<String> = Vec::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if !said.iter().any(|line| line.contains(text.as_str())) {
            said.push(text);
        }
    }
    let mut lines = said.into_iter();
    let mut out = format!("Error: {}", lines.next().unwrap_or_default());
    for cause in lines {
        out.push_str("\n  because: ");
        out.push_str(&cause);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that says its source's message and returns it too.
    #[derive(Debug)]
    struct Wrapping(std::io::Error);

    impl std::fmt::Display for Wrapping {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "log: {}", self.0)
        }
    }

    impl std::error::Error for Wrapping {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_already_said_is_left_out() {
        let e = anyhow::Error::new(Wrapping(std::io::Error::other("directory d is locked")));
        assert_eq!(render(&e), "Error: log: directory d is locked");
    }

    #[test]
    fn each_new_cause_has_its_line() {
        let e = anyhow::Error::new(Wrapping(std::io::Error::other("directory d is locked")))
            .context("opening the log in d");
        assert_eq!(
            render(&e),
            "Error: opening the log in d\n  because: log: directory d is locked"
        );
    }
}
