//! Module paths named in Rust source text.
//!
//! Owns turning one file's text into the absolute module paths it names through `crate::`,
//! `super::` and `self::` (use trees with braces included), after removing comments,
//! string and character literals and the unit-test tail. Knows nothing of which modules
//! exist: the caller keeps the paths that lead into a room.

/// An absolute module path inside a crate: `["engine", "lane"]` for `crate::engine::lane`.
pub type ModPath = Vec<String>;

/// The absolute paths `text` names, for a file whose own module path is `own` (`self` in
/// a file is that file's module; `super` its parent).
#[must_use]
pub fn references(text: &str, own: &[String]) -> Vec<ModPath> {
    let code = without_test_tail(&code_only(text));
    let tokens = tokenize(&code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let starts_path = matches!(tokens[i], Token::Ident(ref w) if w == "crate" || w == "super" || w == "self")
            && tokens.get(i + 1) == Some(&Token::PathSep)
            && !preceded_by_path_sep(&tokens, i);
        if !starts_path {
            i += 1;
            continue;
        }
        let mut base: ModPath = match &tokens[i] {
            Token::Ident(w) if w == "crate" => Vec::new(),
            Token::Ident(w) if w == "self" => own.to_vec(),
            _ => own[..own.len().saturating_sub(1)].to_vec(),
        };
        i += 2;
        // `super::super::…`
        while matches!(tokens.get(i), Some(Token::Ident(w)) if w == "super")
            && tokens.get(i + 1) == Some(&Token::PathSep)
        {
            base.pop();
            i += 2;
        }
        i = tree(&tokens, i, &base, &mut out);
    }
    out
}

/// Whether the token before `i` is `::` (then `self`/`super` there is mid-path).
fn preceded_by_path_sep(tokens: &[Token], i: usize) -> bool {
    i > 0 && tokens[i - 1] == Token::PathSep
}

/// Reads a path or use tree starting at `i` under `base`; pushes each leaf path and returns
/// the index after it.
fn tree(tokens: &[Token], mut i: usize, base: &[String], out: &mut Vec<ModPath>) -> usize {
    let mut path = base.to_vec();
    loop {
        match tokens.get(i) {
            Some(Token::Ident(w)) => {
                if w != "self" {
                    path.push(w.clone());
                }
                i += 1;
                if tokens.get(i) == Some(&Token::PathSep) {
                    i += 1;
                    continue;
                }
                out.push(path);
                return i;
            }
            Some(Token::Open) => {
                i += 1;
                loop {
                    match tokens.get(i) {
                        Some(Token::Close) => return i + 1,
                        Some(Token::Comma) => i += 1,
                        Some(Token::Ident(_) | Token::Open) => i = tree(tokens, i, &path, out),
                        Some(_) => i += 1, // `*`, `as` renames and the like
                        None => return i,
                    }
                }
            }
            _ => {
                // `crate::*` or a path ending in something else: the path so far.
                if !path.is_empty() {
                    out.push(path);
                }
                return i;
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Other,
}

fn tokenize(code: &str) -> Vec<Token> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(Token::Ident(chars[start..i].iter().collect()));
            continue;
        }
        let token = match c {
            ':' if chars.get(i + 1) == Some(&':') => {
                i += 1;
                Token::PathSep
            }
            '{' => Token::Open,
            '}' => Token::Close,
            ',' => Token::Comma,
            c if c.is_whitespace() => {
                i += 1;
                continue;
            }
            _ => Token::Other,
        };
        tokens.push(token);
        i += 1;
    }
    tokens
}

/// The text with comments, string literals and character literals blanked out (lifetimes
/// kept), so that only code can name a module.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && matches!(next, Some('"' | '#')) && raw_string_end(&chars, i).is_some()
        {
            i = raw_string_end(&chars, i).unwrap_or(chars.len());
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            match char_literal_len(&chars, i) {
                Some(len) => {
                    i += len;
                    out.push_str("' '");
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The index after a raw string literal starting at `i` (`r"…"`, `r#"…"#`), if one does.
fn raw_string_end(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i + 1;
    let mut hashes = 0;
    while chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < chars.len() {
        if chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(chars.len())
}

/// The length of a character literal at `i` (`'a'`, `'\n'`, `'\u{7f}'`), or `None` for a
/// lifetime or label.
fn char_literal_len(chars: &[char], i: usize) -> Option<usize> {
    if chars.get(i + 1) == Some(&'\\') {
        let close = (i + 3..chars.len().min(i + 12)).find(|&j| chars[j] == '\'')?;
        return Some(close - i + 1);
    }
    (chars.get(i + 2) == Some(&'\'')).then_some(3)
}

/// The text before the first `#[cfg(test)]` that introduces a module: unit tests may
/// reach up.
fn without_test_tail(code: &str) -> String {
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]") {
        let start = from + at;
        let rest = code[start + "#[cfg(test)]".len()..].trim_start();
        if rest.starts_with("mod ") || rest.starts_with("pub mod ") {
            return code[..start].to_string();
        }
        from = start + 1;
    }
    code.to_string()
}

#[cfg(test)]
mod tests {
    use super::references;

    fn own(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    fn refs(text: &str, at: &[&str]) -> Vec<String> {
        references(text, &own(at))
            .into_iter()
            .map(|p| p.join("::"))
            .collect()
    }

    #[test]
    fn use_trees_expand_to_their_leaves() {
        let text = "use crate::engine::{lane::{Lane, Inbox}, shared, self};";
        assert_eq!(
            refs(text, &["x"]),
            [
                "engine::lane::Lane",
                "engine::lane::Inbox",
                "engine::shared",
                "engine"
            ]
        );
    }

    #[test]
    fn self_and_super_are_relative_to_the_file() {
        assert_eq!(
            refs("use super::commit::Barrier;", &["engine", "lane"]),
            ["engine::commit::Barrier"]
        );
        assert_eq!(
            refs(
                "use super::super::time::Clock;",
                &["engine", "commit", "barrier"]
            ),
            ["engine::time::Clock"]
        );
        assert_eq!(
            refs("let x = self::inner::f();", &["engine", "lane"]),
            ["engine::lane::inner::f"]
        );
    }

    #[test]
    fn comments_strings_and_char_literals_name_nothing() {
        let text = "// crate::a::b\n/* crate::c */ let s = \"crate::d\"; let q = '\"'; let r = r#\"crate::e\"#; fn f<'a>(x: &'a str) { crate::g::h(x) }";
        assert_eq!(refs(text, &["x"]), ["g::h"]);
    }

    #[test]
    fn unit_tests_are_left_out() {
        let text = "use crate::a::B;\n#[cfg(test)]\nmod tests { use crate::c::D; }";
        assert_eq!(refs(text, &["x"]), ["a::B"]);
    }

    #[test]
    fn self_in_the_middle_of_a_path_is_not_a_root() {
        assert_eq!(refs("use crate::a::{self, b};", &["x"]), ["a", "a::b"]);
        assert_eq!(
            refs("x.self_check(); Self::new()", &["x"]),
            Vec::<String>::new()
        );
    }
}
