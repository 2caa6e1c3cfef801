//! Small text files sealed with a CRC-32 trailer, written atomically.
//!
//! Owns the envelope shared by a store directory's metadata and checkpoint files: UTF-8
//! lines ending in `\n`, the last one `crc32=<8 lowercase hex digits>` over every byte
//! before it. A file that is cut, has a flipped bit or is not UTF-8 fails [`unseal`], so
//! the caller never parses damaged text as if it were whole. [`write_sealed`] writes a
//! temporary file, syncs it, renames it over the target and syncs the directory.
//!
//! This module never knows what the lines mean.

use std::fs;
use std::io::{self, Write as _};
use std::path::Path;

const TRAILER: &str = "crc32=";

/// `body` (complete `\n`-terminated lines) with its checksum line appended.
pub(crate) fn seal(mut body: String) -> String {
    debug_assert!(body.is_empty() || body.ends_with('\n'));
    let crc = crc32fast::hash(body.as_bytes());
    body.push_str(&format!("{TRAILER}{crc:08x}\n"));
    body
}

/// The body of a sealed file, or why it is not one.
pub(crate) fn unseal(bytes: &[u8]) -> Result<&str, String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| format!("not utf-8 text (byte {})", e.valid_up_to()))?;
    let without_newline = text
        .strip_suffix('\n')
        .ok_or_else(|| "does not end with a newline (cut short?)".to_string())?;
    let (body_len, last) = match without_newline.rfind('\n') {
        Some(i) => (i + 1, &without_newline[i + 1..]),
        None => (0, without_newline),
    };
    let hex = last
        .strip_prefix(TRAILER)
        .ok_or_else(|| "has no checksum line (cut short?)".to_string())?;
    let lower_hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
    let stored = (hex.len() == 8 && hex.bytes().all(lower_hex))
        .then(|| u32::from_str_radix(hex, 16).ok())
        .flatten()
        .ok_or_else(|| format!("has a malformed checksum line {last:?}"))?;
    let body = &text[..body_len];
    let actual = crc32fast::hash(body.as_bytes());
    if actual != stored {
        return Err(format!(
            "checksum mismatch: recorded {stored:08x}, contents give {actual:08x}"
        ));
    }
    Ok(body)
}

/// Writes `contents` to `path` atomically and durably (temp file, fsync, rename, directory
/// fsync). Returns the path that failed with the error.
pub(crate) fn write_atomic(
    path: &Path,
    contents: &[u8],
) -> Result<(), (std::path::PathBuf, io::Error)> {
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);
    let fail = |p: &Path| {
        let p = p.to_path_buf();
        move |e| (p, e)
    };
    let mut f = fs::File::create(&tmp).map_err(fail(&tmp))?;
    f.write_all(contents).map_err(fail(&tmp))?;
    f.sync_all().map_err(fail(&tmp))?;
    drop(f);
    fs::rename(&tmp, path).map_err(fail(path))?;
    if let Some(parent) = path.parent() {
        fs::File::open(parent)
            .and_then(|d| d.sync_all())
            .map_err(fail(parent))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sealed_text_round_trips_and_every_cut_or_flip_is_refused() {
        let sealed = seal("a=1\nb=two\n".to_string());
        assert_eq!(unseal(sealed.as_bytes()), Ok("a=1\nb=two\n"));
        assert_eq!(unseal(seal(String::new()).as_bytes()), Ok(""));
        let bytes = sealed.as_bytes();
        for cut in 0..bytes.len() {
            assert!(unseal(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for at in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.to_vec();
                b[at] ^= 1 << bit;
                assert!(unseal(&b).is_err(), "flip at {at} bit {bit}");
            }
        }
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = unseal(&bytes);
        }
    }
}
