//! Streaming the frames of a closed segment through a [`Reader`], a chunk at
//! a time, so that compaction never holds more of a segment than its
//! largest frame or one chunk.
//!
//! Owns: [`Frames`]. Every frame's checksum is checked on the way; a closed
//! segment is whole (recovery checked it), so anything but whole frames up
//! to its size is [`LogError::Corrupt`].

use std::path::Path;

use super::super::format::{self, FrameAt};
use super::super::storage::Reader;
use crate::error::LogError;

/// Bytes read at a time (more when a frame is larger).
pub(crate) const CHUNK: usize = 256 << 10;

/// The frames of `[from, end)` of a segment, in order.
#[derive(Debug)]
pub(crate) struct Frames<'r> {
    reader: &'r Reader,
    path: &'r Path,
    end: u64,
    buf: Vec<u8>,
    /// File position of `buf[0]`.
    buf_at: u64,
    /// Position in `buf` of the next frame.
    at: usize,
    read: u64,
}

impl<'r> Frames<'r> {
    /// Frames from byte `from` (a frame boundary) to byte `end`.
    pub(crate) fn new(reader: &'r Reader, path: &'r Path, from: u64, end: u64) -> Self {
        Frames {
            reader,
            path,
            end,
            buf: Vec::new(),
            buf_at: from,
            at: 0,
            read: 0,
        }
    }

    /// Bytes read from the file so far.
    pub(crate) fn bytes_read(&self) -> u64 {
        self.read
    }

    /// Reads on from `pos`, the start of a frame the buffer holds only the
    /// beginning of (or none of): keeps that beginning and reads the rest
    /// of the frame, or a chunk if more.
    fn refill(&mut self, pos: u64) -> Result<(), LogError> {
        let kept = self.buf.len() - self.at;
        let rest = &self.buf[self.at..];
        let frame_len = (rest.len() >= format::FRAME_HEADER).then(|| {
            u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize + format::FRAME_HEADER
        });
        let left = usize::try_from(self.end - pos).unwrap_or(usize::MAX);
        let want = frame_len.unwrap_or(0).max(CHUNK).min(left);
        // The kept beginning moves to the front and the rest is read after
        // it, into the same buffer.
        self.buf.drain(..self.at);
        self.buf.resize(want, 0);
        self.reader
            .read_exact_at(pos + kept as u64, &mut self.buf[kept..], self.path)?;
        self.buf_at = pos;
        self.at = 0;
        self.read += (want - kept) as u64;
        Ok(())
    }

    /// The next frame: its file position and body.
    pub(crate) fn next_frame(&mut self) -> Result<Option<(u64, &[u8])>, LogError> {
        loop {
            let pos = self.buf_at + self.at as u64;
            if pos >= self.end {
                return Ok(None);
            }
            let frame = format::frame_at(&self.buf, self.at);
            match frame {
                FrameAt::Valid { next, .. } => {
                    let body = self.at + format::FRAME_HEADER;
                    self.at = next;
                    return Ok(Some((pos, &self.buf[body..next])));
                }
                FrameAt::End | FrameAt::Truncated
                    if self.buf_at + (self.buf.len() as u64) < self.end =>
                {
                    self.refill(pos)?;
                }
                bad => {
                    return Err(LogError::Corrupt {
                        file: self.path.to_path_buf(),
                        position: pos,
                        reason: format!("{} in a closed segment being compacted", bad.reason()),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn frames_of(bodies: &[Vec<u8>]) -> Vec<u8> {
        let mut data = Vec::new();
        for b in bodies {
            format::push_frame(&mut data, b);
        }
        data
    }

    fn all(reader: &Reader, from: u64, end: u64) -> Result<Vec<(u64, Vec<u8>)>, LogError> {
        let mut f = Frames::new(reader, Path::new("seg"), from, end);
        let mut out = Vec::new();
        while let Some((pos, body)) = f.next_frame()? {
            out.push((pos, body.to_vec()));
        }
        Ok(out)
    }

    #[test]
    fn frames_larger_than_a_chunk_and_across_chunks_come_out_whole() {
        let bodies: Vec<Vec<u8>> = [10, CHUNK - 20, 3 * CHUNK, 7, CHUNK]
            .iter()
            .enumerate()
            .map(|(i, n)| vec![i as u8; *n])
            .collect();
        let data = frames_of(&bodies);
        let reader = Reader::Mem(Arc::new(data.clone()));
        let got = all(&reader, 0, data.len() as u64).expect("frames");
        assert_eq!(
            got.iter().map(|(_, b)| b.clone()).collect::<Vec<_>>(),
            bodies
        );
        // Starting at the third frame's position gives the rest.
        let third = got[2].0;
        let rest = all(&reader, third, data.len() as u64).expect("frames");
        assert_eq!(rest, got[2..].to_vec());
    }

    #[test]
    fn a_cut_or_damaged_frame_is_corruption_at_its_position() {
        let data = frames_of(&[vec![1; 100], vec![2; 100]]);
        let second = 108u64;
        let cut = Reader::Mem(Arc::new(data[..data.len() - 1].to_vec()));
        match all(&cut, 0, data.len() as u64 - 1) {
            Err(LogError::Corrupt { position, .. }) => assert_eq!(position, second),
            other => panic!("{other:?}"),
        }
        let mut flipped = data.clone();
        flipped[150] ^= 1;
        let flipped = Reader::Mem(Arc::new(flipped));
        match all(&flipped, 0, data.len() as u64) {
            Err(LogError::Corrupt { position, .. }) => assert_eq!(position, second),
            other => panic!("{other:?}"),
        }
    }
}
