//! Fuzz targets of a store directory's own files, as an open reads them from
//! disk: the metadata file ([`parse_meta`]) and the checkpoint with its
//! manifest ([`Checkpoint::parse`], then [`Manifest::verify`] against a real
//! tree), both inside the sealed envelope ([`unseal`]).
//!
//! Each target takes the file's bytes mutated as they are (the checksum
//! fails: the envelope's checks), and the body mutated then sealed again (the
//! checksum holds: the parser's checks). A parsed file seals and parses back
//! to the same value.

use proptest::prelude::*;
use stoatflow_fuzzing::{Tier, fuzz, inputs};

use super::super::checkpoint::{Checkpoint, Manifest};
use super::super::sealed::{seal, unseal};
use super::{FORMAT_KEY, STORE_FORMAT, parse_meta};
use crate::changelog::{ChangelogOffset, ChangelogPartition};

/// Text pieces of the two files, for the token mutation.
const TOKENS: &[&[u8]] = &[
    b"\n",
    b"\r\n",
    b" ",
    b"=",
    b"stoatflow-store-format=",
    b"application.id=",
    b"store=",
    b"stoatflow-checkpoint-format=2\n",
    b"offset ",
    b"dir ",
    b"file ",
    b"crc32=",
    b"4294967295",
    b"18446744073709551615",
    b"99999999999999999999999",
    b"-1",
    b"ffffffff",
    b"../",
];

/// Either the bytes as they are, or (`reseal`) the bytes as a body, without
/// the checksum line a sealed seed brought, sealed again.
fn file(bytes: Vec<u8>, reseal: bool) -> Vec<u8> {
    if !reseal {
        return bytes;
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut body = String::new();
    for line in text.lines().filter(|l| !l.starts_with("crc32=")) {
        body.push_str(line);
        body.push('\n');
    }
    seal(body).into_bytes()
}

fn body_of(sealed: &str) -> Vec<u8> {
    unseal(sealed.as_bytes())
        .expect("a seed seals")
        .as_bytes()
        .to_vec()
}

/// The metadata file: a value or an error; a sealed file's body sealed again
/// parses to the same value.
#[test]
fn metadata_files_parse_or_err() {
    let current = seal(format!(
        "{FORMAT_KEY}{STORE_FORMAT}\napplication.id=app-1\nstore=counts\n"
    ));
    let legacy = format!("{FORMAT_KEY}1\napplication.id=app\nstore=s\n");
    let seeds = vec![
        current.clone().into_bytes(),
        legacy.into_bytes(),
        body_of(&current),
    ];
    fuzz(
        module_path!(),
        "metadata_files_parse_or_err",
        Tier::DECODER,
        (inputs(seeds, TOKENS, 160), any::<bool>()),
        |(bytes, reseal)| {
            let bytes = file(bytes, reseal);
            let Ok(meta) = parse_meta(&bytes) else {
                return Ok(());
            };
            if let Ok(body) = unseal(&bytes) {
                let again = seal(body.to_string());
                prop_assert_eq!(parse_meta(again.as_bytes()), Ok(meta));
            }
            Ok(())
        },
    );
}

/// The checkpoint file: a checkpoint or an error; a checkpoint encodes to a
/// file that parses to it; its manifest checked against a real tree names
/// damage or finds none, never fails (it reads only what the walk found).
#[test]
fn checkpoint_files_parse_or_err_and_round_trip() {
    let tree = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(tree.path().join("a/b")).expect("dirs");
    std::fs::write(tree.path().join("a/b/journal"), b"some bytes").expect("file");
    std::fs::write(tree.path().join("a/tables"), b"").expect("file");
    let manifest = Manifest::scan(tree.path()).expect("scan");
    let with_files = Checkpoint {
        offsets: vec![
            (ChangelogPartition(0), ChangelogOffset(17)),
            (ChangelogPartition(3), ChangelogOffset(u64::MAX)),
        ],
        manifest,
    }
    .encode();
    let empty = Checkpoint {
        offsets: Vec::new(),
        manifest: Manifest::default(),
    }
    .encode();
    let seeds = vec![
        with_files.clone().into_bytes(),
        empty.into_bytes(),
        body_of(&with_files),
    ];
    fuzz(
        module_path!(),
        "checkpoint_files_parse_or_err_and_round_trip",
        Tier::DECODER,
        (inputs(seeds, TOKENS, 320), any::<bool>()),
        |(bytes, reseal)| {
            let Ok(checkpoint) = Checkpoint::parse(&file(bytes, reseal)) else {
                return Ok(());
            };
            let again = Checkpoint::parse(checkpoint.encode().as_bytes());
            prop_assert_eq!(again.as_ref(), Ok(&checkpoint));
            prop_assert!(checkpoint.manifest.verify(tree.path()).is_ok());
            Ok(())
        },
    );
}
