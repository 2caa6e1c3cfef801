//! The CRC-32 of a file's bytes, read without reading its holes.
//!
//! Owns [`file_crc`]. The engine preallocates each journal file to its full size with
//! `set_len`, so a closed store's journal is mostly a hole: reading it would checksum tens
//! of MiB of zeros at every clean close and every open. Instead the data regions are found
//! with `SEEK_DATA`/`SEEK_HOLE` and only they are read; a hole (which reads as zeros) is
//! folded into the CRC arithmetically ([`zeros`]), in O(log n) steps for n bytes. On a
//! filesystem that does not report holes the whole file is read. Either way the result is
//! bit-identical to the CRC-32 of the file's bytes read whole.
//!
//! This module never knows what the files are, nor what a manifest records.

use std::fs::File;
use std::io::{self, Read as _, Seek as _, SeekFrom};
use std::path::Path;

use crc32fast::Hasher;
use rustix::fs::SeekFrom as SeekRegion;
use rustix::io::Errno;

/// Read buffer for the data regions.
const CHUNK: usize = 256 * 1024;

/// A file's checksum and how it was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileCrc {
    /// The CRC-32 of the file's bytes.
    pub(crate) crc: u32,
    /// The file's length in bytes, holes included: fewer than its size if it shrank while
    /// being read.
    pub(crate) len: u64,
    /// How many of those bytes were read (the rest were holes).
    pub(crate) read: u64,
}

/// The CRC-32 of the file at `path`, reading only its data regions.
///
/// # Errors
/// An i/o failure opening or reading the file.
pub(crate) fn file_crc(path: &Path) -> io::Result<FileCrc> {
    let mut file = File::open(path)?;
    let size = file.metadata()?.len();
    let mut sum = Summer {
        hasher: Hasher::new(),
        buf: Vec::new(),
        read: 0,
    };
    let mut pos = 0;
    while pos < size {
        let data = match next_region(&file, SeekRegion::Data(pos)) {
            Ok(Some(data)) => data.min(size),
            // No data after `pos`: the rest of the file is a hole.
            Ok(None) => size,
            Err(_) if pos == 0 => return sum.read_to_end(file),
            Err(e) => return Err(e),
        };
        sum.hasher.combine(&zeros(data - pos));
        pos = data;
        if pos == size {
            break;
        }
        let hole = match next_region(&file, SeekRegion::Hole(pos))? {
            Some(hole) => hole.min(size),
            None => size,
        };
        file.seek(SeekFrom::Start(pos))?;
        let got = sum.read_exactly(&mut file, hole - pos)?;
        pos += got;
        if pos < hole {
            // The file shrank while being read: report what it held.
            return Ok(sum.finish(pos));
        }
    }
    Ok(sum.finish(pos))
}

/// Where the next data (or hole) region starts at or after the given offset, or `None` if
/// there is none (`ENXIO`: past the last data, or past the end).
fn next_region(file: &File, whence: SeekRegion) -> io::Result<Option<u64>> {
    match rustix::fs::seek(file, whence) {
        Ok(at) => Ok(Some(at)),
        Err(Errno::NXIO) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A CRC in progress over the regions read so far.
struct Summer {
    hasher: Hasher,
    buf: Vec<u8>,
    read: u64,
}

impl Summer {
    /// Reads up to `want` bytes from the file's position into the CRC; fewer only at its end.
    fn read_exactly(&mut self, file: &mut File, want: u64) -> io::Result<u64> {
        if self.buf.is_empty() {
            self.buf = vec![0u8; CHUNK];
        }
        let mut got = 0;
        while got < want {
            let ask = usize::try_from(want - got).map_or(CHUNK, |w| w.min(CHUNK));
            let n = match file.read(&mut self.buf[..ask]) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.hasher.update(&self.buf[..n]);
            got += n as u64;
        }
        self.read += got;
        Ok(got)
    }

    /// Reads the whole file from its start, for a filesystem that does not report holes.
    fn read_to_end(mut self, mut file: File) -> io::Result<FileCrc> {
        file.seek(SeekFrom::Start(0))?;
        let len = self.read_exactly(&mut file, u64::MAX)?;
        Ok(self.finish(len))
    }

    fn finish(self, len: u64) -> FileCrc {
        FileCrc {
            crc: self.hasher.finalize(),
            len,
            read: self.read,
        }
    }
}

/// A hasher that has seen `len` zero bytes, built by doubling: the CRC state of `2n` zeros
/// is that of `n` zeros combined with itself, so this takes O(log len) combines.
fn zeros(len: u64) -> Hasher {
    let mut total = Hasher::new();
    let mut power = Hasher::new();
    power.update(&[0]);
    let mut rest = len;
    while rest != 0 {
        if rest & 1 == 1 {
            total.combine(&power);
        }
        rest >>= 1;
        if rest != 0 {
            let same = power.clone();
            power.combine(&same);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write as _;

    /// Writes `layout` (runs of data, each a byte pattern, and holes) to a fresh file, and
    /// returns the file with every byte it reads as.
    fn sparse_file(dir: &Path, layout: &[(bool, u64)]) -> (std::path::PathBuf, Vec<u8>) {
        let path = dir.join("sparse");
        let mut f = File::create(&path).unwrap();
        let mut bytes = Vec::new();
        for (i, &(is_data, len)) in layout.iter().enumerate() {
            if is_data {
                let run: Vec<u8> = (0..len)
                    .map(|j| (j as u8) ^ (i as u8).wrapping_mul(31) | 1)
                    .collect();
                f.write_all(&run).unwrap();
                bytes.extend_from_slice(&run);
            } else {
                f.seek(SeekFrom::Current(len as i64)).unwrap();
                bytes.resize(bytes.len() + len as usize, 0);
            }
        }
        // A trailing hole needs the length set: seeking alone does not extend the file.
        f.set_len(bytes.len() as u64).unwrap();
        (path, bytes)
    }

    #[test]
    fn a_run_of_zeros_matches_hashing_them() {
        for len in [
            0u64,
            1,
            2,
            3,
            7,
            8,
            255,
            4096,
            65_537,
            1 << 20,
            3 * (1 << 20) + 5,
        ] {
            let mut want = Hasher::new();
            want.update(&vec![0u8; len as usize]);
            let got = zeros(len);
            assert_eq!(got.total_len(), len);
            assert_eq!(got.finalize(), want.finalize(), "{len} zeros");
        }
    }

    #[test]
    fn a_sparse_file_checksums_as_its_bytes_read_whole_without_reading_its_holes() {
        let dir = tempfile::tempdir().unwrap();
        // Data, a hole, data, a trailing hole; no size a multiple of a block or a page.
        let (path, bytes) = sparse_file(
            dir.path(),
            &[
                (true, 5_003),
                (false, 3_000_017),
                (true, 70_001),
                (false, 9_000_011),
            ],
        );
        let sum = file_crc(&path).unwrap();
        assert_eq!(
            (sum.crc, sum.len),
            (crc32fast::hash(&bytes), bytes.len() as u64)
        );
        // Holes are reported at block granularity at worst; the file's zeros are ~12 MB.
        assert!(
            sum.read < 1 << 20,
            "read {} of {} bytes: the holes were read",
            sum.read,
            sum.len
        );
    }

    #[test]
    fn a_file_without_holes_and_an_empty_file_checksum_as_their_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let (path, bytes) = sparse_file(dir.path(), &[(true, 300_007)]);
        let sum = file_crc(&path).unwrap();
        assert_eq!(
            sum,
            FileCrc {
                crc: crc32fast::hash(&bytes),
                len: 300_007,
                read: 300_007
            }
        );
        let (path, _) = sparse_file(dir.path(), &[]);
        assert_eq!(
            file_crc(&path).unwrap(),
            FileCrc {
                crc: 0,
                len: 0,
                read: 0
            }
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn any_layout_of_data_and_holes_checksums_as_its_bytes(
            layout in proptest::collection::vec((any::<bool>(), 1u64..200_000), 0..6)
        ) {
            let dir = tempfile::tempdir().unwrap();
            let (path, bytes) = sparse_file(dir.path(), &layout);
            let sum = file_crc(&path).unwrap();
            prop_assert_eq!(sum.crc, crc32fast::hash(&bytes));
            prop_assert_eq!(sum.len, bytes.len() as u64);
        }
    }
}
