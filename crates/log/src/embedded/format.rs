//! Byte layouts of the embedded log: frames, record batches and
//! transaction-log entries. Pure functions over byte slices; no I/O.
//!
//! Every stored unit is a *frame*:
//!
//! ```text
//! [len: u32 LE][crc: u32 LE = crc32(len bytes ++ body)][body: len bytes]
//! ```
//!
//! A segment file is a sequence of frames whose body is a record batch:
//!
//! ```text
//! [base offset: u64][record count: u32][max timestamp: i64][txn: u64]
//! record* = [offset delta: u32][timestamp: i64][key: bytes?][value: bytes?]
//!           [header count: u32] ([key: str][value: bytes?])*
//! bytes?  = [len: i32, -1 = null, other negatives malformed][bytes]     str = [len: u32][UTF-8]
//! ```
//!
//! All integers little-endian. Offsets inside a batch are explicit (base +
//! delta) so that compacted batches can be sparse. `txn` is the sequence of
//! the transaction that wrote the batch (recovery checks that data past the
//! committed end belongs to the one transaction a crash can interrupt);
//! compaction writes 0.

use crate::types::{BatchSpans, Header, Record, RecordRef, Timestamp};

/// Bytes before a frame's body.
pub(crate) const FRAME_HEADER: usize = 8;
/// Bytes of a batch body before its records.
pub(crate) const BATCH_HEADER: usize = 28;

/// What a scan found at a position of a file.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FrameAt<'a> {
    /// A whole, checksummed frame; `next` is the position after it.
    Valid { body: &'a [u8], next: usize },
    /// Nothing at all (end of data).
    End,
    /// A header cut short, or a length that runs past the end of the data.
    Truncated,
    /// A whole frame whose checksum does not match.
    BadChecksum { len: usize },
}

impl FrameAt<'_> {
    /// Why the frame is not valid, for an error message.
    pub(crate) fn reason(&self) -> String {
        match self {
            FrameAt::Valid { .. } | FrameAt::End => String::new(),
            FrameAt::Truncated => {
                "frame cut short or its length runs past the end of the file".into()
            }
            FrameAt::BadChecksum { len } => format!("checksum mismatch in a {len}-byte frame"),
        }
    }
}

fn frame_crc(len: [u8; 4], body: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&len);
    h.update(body);
    h.finalize()
}

/// Reads the frame at `pos` of `data`, the file's bytes from position 0
/// (or at least up to its end).
pub(crate) fn frame_at(data: &[u8], pos: usize) -> FrameAt<'_> {
    let rest = data.len() - pos.min(data.len());
    if rest == 0 {
        return FrameAt::End;
    }
    if rest < FRAME_HEADER {
        return FrameAt::Truncated;
    }
    let len_bytes = [data[pos], data[pos + 1], data[pos + 2], data[pos + 3]];
    let len = u32::from_le_bytes(len_bytes) as usize;
    let crc = u32::from_le_bytes([data[pos + 4], data[pos + 5], data[pos + 6], data[pos + 7]]);
    let start = pos + FRAME_HEADER;
    if len > data.len() - start {
        return FrameAt::Truncated;
    }
    let body = &data[start..start + len];
    if frame_crc(len_bytes, body) == crc {
        FrameAt::Valid {
            body,
            next: start + len,
        }
    } else {
        FrameAt::BadChecksum { len }
    }
}

/// The unit in which a crash can leave unwritten (zero) bytes: file systems
/// write whole sectors, and every block boundary is a sector boundary.
pub(crate) const SECTOR: usize = 512;

/// Whether `data[pos..]`, where no valid frame starts, is what a crash can
/// leave of **one** frame appended at `pos` whose fsync never returned.
///
/// After the last completed fsync a file holds its synced bytes, then up to
/// the length of the append, each sector of the appended range either as
/// written or as zeros (allocated, never written). So the tail is torn when:
/// no valid frame starts anywhere after `pos` (a second frame would have been
/// appended after a later fsync, so the damage is not at the tail), and
/// either the header is incomplete or lies in a zeroed sector (its length is
/// unknown), or the frame's length runs to or past the end of the file
/// (a prefix), with a checksum mismatch of a whole frame explained by a
/// zeroed sector inside it. Anything else (a flipped bit, a length that
/// ends before the file does) is damage.
pub(crate) fn is_torn_append(data: &[u8], pos: usize) -> bool {
    if pos >= data.len() {
        return true;
    }
    let valid_after =
        (pos + 1..data.len()).any(|q| matches!(frame_at(data, q), FrameAt::Valid { .. }));
    if valid_after {
        return false;
    }
    if data.len() - pos < FRAME_HEADER || zeroed_sector(data, pos, pos + FRAME_HEADER) {
        return true;
    }
    let len = u32::from_le_bytes([data[pos], data[pos + 1], data[pos + 2], data[pos + 3]]) as usize;
    let end = pos + FRAME_HEADER + len;
    match end.cmp(&data.len()) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Equal => zeroed_sector(data, pos, end),
        std::cmp::Ordering::Less => false,
    }
}

/// Whether some sector overlapping `[from, to)` is all zeros from `from`
/// to the end of the data (a sector of the append never written).
fn zeroed_sector(data: &[u8], from: usize, to: usize) -> bool {
    let mut s = from - from % SECTOR;
    while s < to.min(data.len()) {
        let lo = s.max(from);
        let hi = (s + SECTOR).min(data.len());
        if data[lo..hi].iter().all(|&b| b == 0) {
            return true;
        }
        s += SECTOR;
    }
    false
}

/// Appends a frame holding `body` to `out`.
pub(crate) fn push_frame(out: &mut Vec<u8>, body: &[u8]) {
    let len = u32::try_from(body.len()).expect("frames are bounded far below 4 GiB");
    let len_bytes = len.to_le_bytes();
    out.extend_from_slice(&len_bytes);
    out.extend_from_slice(&frame_crc(len_bytes, body).to_le_bytes());
    out.extend_from_slice(body);
}

/// A batch being built: frame header and batch header are reserved at the
/// front and filled in by [`BatchBuilder::finish`], so the whole frame is
/// written with one copy.
#[derive(Debug)]
pub(crate) struct BatchBuilder {
    buf: Vec<u8>,
    count: u32,
    max_ts: i64,
    /// One past the last record's delta: a `u64`, since a record at the
    /// widest delta, `u32::MAX`, makes it 2^32.
    next_delta: u64,
}

impl BatchBuilder {
    pub(crate) fn new(capacity: usize) -> Self {
        let mut buf = Vec::with_capacity(capacity);
        buf.resize(FRAME_HEADER + BATCH_HEADER, 0);
        BatchBuilder {
            buf,
            count: 0,
            max_ts: i64::MIN,
            next_delta: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    /// Adds a record at the next offset (delta = records so far).
    pub(crate) fn push(&mut self, record: RecordRef<'_>) {
        let delta = u32::try_from(self.next_delta)
            .expect("a batch at consecutive offsets is bounded in bytes, far below 2^32 records");
        self.push_with_delta(delta, record);
    }

    /// Adds a record at an explicit offset delta (compaction, whose caller
    /// keeps deltas increasing), up to `u32::MAX`.
    pub(crate) fn push_with_delta(&mut self, delta: u32, record: RecordRef<'_>) {
        let b = &mut self.buf;
        b.extend_from_slice(&delta.to_le_bytes());
        b.extend_from_slice(&record.timestamp.0.to_le_bytes());
        put_opt_bytes(b, record.key);
        put_opt_bytes(b, record.value);
        b.extend_from_slice(&(record.headers.len() as u32).to_le_bytes());
        for h in record.headers {
            b.extend_from_slice(&(h.key.len() as u32).to_le_bytes());
            b.extend_from_slice(h.key.as_bytes());
            put_opt_bytes(b, h.value.as_deref());
        }
        self.count += 1;
        self.next_delta = u64::from(delta) + 1;
        self.max_ts = self.max_ts.max(record.timestamp.0);
    }

    /// Offsets this batch will take once based: `next_delta`.
    pub(crate) fn offset_span(&self) -> u64 {
        self.next_delta
    }

    /// Fills in the headers for `base` and transaction `txn` and returns the
    /// frame bytes.
    pub(crate) fn finish(&mut self, base: u64, txn: u64) -> &[u8] {
        let body_len = self.buf.len() - FRAME_HEADER;
        let mut hdr = [0u8; BATCH_HEADER];
        hdr[0..8].copy_from_slice(&base.to_le_bytes());
        hdr[8..12].copy_from_slice(&self.count.to_le_bytes());
        hdr[12..20].copy_from_slice(&self.max_ts.to_le_bytes());
        hdr[20..28].copy_from_slice(&txn.to_le_bytes());
        self.buf[FRAME_HEADER..FRAME_HEADER + BATCH_HEADER].copy_from_slice(&hdr);
        let len_bytes = (body_len as u32).to_le_bytes();
        let crc = frame_crc(len_bytes, &self.buf[FRAME_HEADER..]);
        self.buf[0..4].copy_from_slice(&len_bytes);
        self.buf[4..8].copy_from_slice(&crc.to_le_bytes());
        &self.buf
    }

    pub(crate) fn max_ts(&self) -> i64 {
        self.max_ts
    }
}

/// The smallest encoded record: delta, timestamp, null key, null value, no
/// headers.
const MIN_RECORD: usize = 4 + 8 + 4 + 4 + 4;

/// Encoded size of one record inside a batch.
pub(crate) fn record_size(record: RecordRef<'_>) -> usize {
    4 + 8
        + 4
        + record.key.map_or(0, <[u8]>::len)
        + 4
        + record.value.map_or(0, <[u8]>::len)
        + 4
        + record
            .headers
            .iter()
            .map(|h| 4 + h.key.len() + 4 + h.value.as_ref().map_or(0, Vec::len))
            .sum::<usize>()
}

/// The largest record the log takes, whatever
/// [`EmbeddedConfig::max_record_bytes`](super::EmbeddedConfig::max_record_bytes)
/// says (1 GiB): a key, value or header inside a record is then below
/// `i32::MAX`, which its length field holds, and a batch below `u32::MAX`.
pub(crate) const MAX_RECORD_BYTES_LIMIT: usize = 1 << 30;

fn put_opt_bytes(b: &mut Vec<u8>, v: Option<&[u8]>) {
    match v {
        None => b.extend_from_slice(&(-1i32).to_le_bytes()),
        Some(v) => {
            let len = i32::try_from(v.len())
                .expect("a record's fields are below MAX_RECORD_BYTES_LIMIT, below i32::MAX");
            b.extend_from_slice(&len.to_le_bytes());
            b.extend_from_slice(v);
        }
    }
}

/// The fixed part of a batch body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchHeader {
    pub(crate) base: u64,
    pub(crate) count: u32,
    pub(crate) max_ts: i64,
    pub(crate) txn: u64,
}

/// A malformed body behind a valid checksum: a writer bug, reported as corruption.
#[derive(Debug)]
pub(crate) struct Malformed(pub(crate) &'static str);

pub(crate) fn batch_header(body: &[u8]) -> Result<BatchHeader, Malformed> {
    let mut c = Cursor { b: body };
    Ok(BatchHeader {
        base: c.u64()?,
        count: c.u32()?,
        max_ts: c.i64()?,
        txn: c.u64()?,
    })
}

/// One record of a batch body, borrowed from it: key and value are slices
/// of the body; headers (rare) are decoded into owned values.
#[derive(Debug)]
pub(crate) struct RecordIn<'a> {
    pub(crate) offset: u64,
    pub(crate) timestamp: i64,
    pub(crate) key: Option<&'a [u8]>,
    pub(crate) value: Option<&'a [u8]>,
    pub(crate) headers: Vec<Header>,
}

/// Decodes the records of a batch body without copying keys or values,
/// calling `each` with each record borrowed from `body`.
pub(crate) fn decode_batch_borrowed<'a>(
    body: &'a [u8],
    mut each: impl FnMut(RecordIn<'a>),
) -> Result<BatchHeader, Malformed> {
    let hdr = batch_header(body)?;
    let mut c = Cursor {
        b: &body[BATCH_HEADER..],
    };
    // Offsets increase within a batch: the writer puts records at
    // consecutive deltas, compaction at increasing ones. A repeated or
    // falling delta would hand readers one offset twice or out of order.
    let mut next_delta: u64 = 0;
    for _ in 0..hdr.count {
        let delta = c.u32()?;
        if u64::from(delta) < next_delta {
            return Err(Malformed("record offsets do not increase within the batch"));
        }
        next_delta = u64::from(delta) + 1;
        let timestamp = c.i64()?;
        let key = c.opt_slice()?;
        let value = c.opt_slice()?;
        let n = c.u32()?;
        let mut headers = Vec::with_capacity(n.min(64) as usize);
        for _ in 0..n {
            let k = c.str()?;
            let v = c.opt_bytes()?;
            headers.push(Header { key: k, value: v });
        }
        let offset = hdr
            .base
            .checked_add(u64::from(delta))
            .ok_or(Malformed("record offset overflows"))?;
        each(RecordIn {
            offset,
            timestamp,
            key,
            value,
            headers,
        });
    }
    if !c.b.is_empty() {
        return Err(Malformed("trailing bytes after the last record"));
    }
    Ok(hdr)
}

/// Decodes the records of a batch body, calling `each(offset, record)`
/// with owned records.
pub(crate) fn decode_batch(
    body: &[u8],
    mut each: impl FnMut(u64, Record),
) -> Result<BatchHeader, Malformed> {
    decode_batch_borrowed(body, |r| {
        each(
            r.offset,
            Record {
                key: r.key.map(<[u8]>::to_vec),
                value: r.value.map(<[u8]>::to_vec),
                headers: r.headers,
                timestamp: Timestamp(r.timestamp),
            },
        );
    })
}

/// The offset of the last record of a batch body, walking the records.
pub(crate) fn last_offset(body: &[u8]) -> Result<Option<u64>, Malformed> {
    let mut last = None;
    decode_batch(body, |o, _| last = Some(o))?;
    Ok(last)
}

/// Decodes a batch frame's body, which lies inside the buffer starting at
/// address `buffer`, into spans of that buffer: the records with offsets in
/// `[from, to)`; returns the offset of the last one taken. `room` is the
/// bytes of the buffer from this frame on: the spans reserve room for the
/// records they will likely hold, once, rather than growing frame by frame.
pub(crate) fn fetched(
    body: &[u8],
    buffer: usize,
    room: usize,
    from: u64,
    to: u64,
    spans: &mut BatchSpans,
) -> Result<Option<u64>, Malformed> {
    // Every key and value lies inside the buffer, which ends at or after
    // this body: one check here narrows all their spans.
    let body_end = body.as_ptr() as usize - buffer + body.len();
    assert!(
        u32::try_from(body_end).is_ok(),
        "a fetch buffer is below 4 GiB"
    );
    let span = |s: &[u8]| ((s.as_ptr() as usize - buffer) as u32, s.len() as u32);
    // The count is the writer's word; a damaged one must not reserve more
    // than the body can hold (a record takes at least MIN_RECORD bytes).
    let count = (batch_header(body)?.count as usize).min(body.len() / MIN_RECORD);
    let likely = count
        .saturating_mul(room / body.len().max(1))
        .min(room / MIN_RECORD);
    spans.reserve(count.max(likely));
    let mut last = None;
    decode_batch_borrowed(body, |r| {
        if r.offset >= from && r.offset < to {
            last = Some(r.offset);
            spans.push_spans(
                r.offset,
                r.timestamp,
                r.key.map(span),
                r.value.map(span),
                r.headers,
            );
        }
    })?;
    Ok(last)
}

/// A little-endian reader over a body.
#[derive(Debug)]
pub(crate) struct Cursor<'a> {
    pub(crate) b: &'a [u8],
}

impl<'a> Cursor<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if self.b.len() < n {
            return Err(Malformed("body ends inside a field"));
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u32(&mut self) -> Result<u32, Malformed> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(crate) fn i32(&mut self) -> Result<i32, Malformed> {
        let b = self.take(4)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, Malformed> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    pub(crate) fn i64(&mut self) -> Result<i64, Malformed> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(i64::from_le_bytes(a))
    }
    pub(crate) fn opt_slice(&mut self) -> Result<Option<&'a [u8]>, Malformed> {
        let n = self.i32()?;
        if n == -1 {
            return Ok(None);
        }
        let n = usize::try_from(n).map_err(|_| Malformed("a length below -1 (null)"))?;
        self.take(n).map(Some)
    }
    pub(crate) fn opt_bytes(&mut self) -> Result<Option<Vec<u8>>, Malformed> {
        Ok(self.opt_slice()?.map(<[u8]>::to_vec))
    }
    pub(crate) fn str(&mut self) -> Result<String, Malformed> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| Malformed("string is not utf-8"))
    }
}

/// Writer helpers for transaction-log bodies.
pub(crate) fn put_str(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(&(s.len() as u32).to_le_bytes());
    b.extend_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Record {
        Record::new(Some(b"k"), None, Timestamp(-3)).with_header("h", Some(b"v"))
    }

    #[test]
    fn batch_round_trips_and_record_size_is_exact() {
        let mut b = BatchBuilder::new(64);
        let r = sample();
        b.push((&r).into());
        b.push((&Record::new(None, Some(b"value"), Timestamp(9))).into());
        assert_eq!(
            b.len(),
            FRAME_HEADER
                + BATCH_HEADER
                + record_size((&r).into())
                + record_size((&Record::new(None, Some(b"value"), Timestamp(9))).into())
        );
        let frame = b.finish(100, 5).to_vec();
        let FrameAt::Valid { body, next } = frame_at(&frame, 0) else {
            panic!("frame not valid")
        };
        assert_eq!(next, frame.len());
        let mut got = Vec::new();
        let hdr = decode_batch(body, |o, r| got.push((o, r))).unwrap();
        assert_eq!(
            hdr,
            BatchHeader {
                base: 100,
                count: 2,
                max_ts: 9,
                txn: 5,
            }
        );
        assert_eq!(got[0], (100, r));
        assert_eq!(got[1].0, 101);
    }

    /// A body with records at the given deltas.
    fn body_with_deltas(deltas: &[u32]) -> Vec<u8> {
        let mut b = BatchBuilder::new(64);
        for &d in deltas {
            b.push_with_delta(d, (&sample()).into());
        }
        let frame = b.finish(10, 1).to_vec();
        let FrameAt::Valid { body, .. } = frame_at(&frame, 0) else {
            panic!("frame not valid")
        };
        body.to_vec()
    }

    #[test]
    fn a_batch_whose_offsets_do_not_increase_is_malformed() {
        // Gaps are what compaction leaves: accepted.
        let mut offsets = Vec::new();
        decode_batch(&body_with_deltas(&[0, 3, 9]), |o, _| offsets.push(o)).unwrap();
        assert_eq!(offsets, [10, 13, 19]);
        for deltas in [&[0, 0][..], &[4, 2], &[0, 1, 1]] {
            let err = decode_batch(&body_with_deltas(deltas), |_, _| {}).unwrap_err();
            assert_eq!(
                err.0, "record offsets do not increase within the batch",
                "{deltas:?}"
            );
        }
    }

    #[test]
    fn frames_cut_or_damaged_are_told_apart() {
        let mut data = Vec::new();
        push_frame(&mut data, b"first");
        push_frame(&mut data, b"second");
        for cut in 1..13 {
            assert_eq!(frame_at(&data[..cut], 0), FrameAt::Truncated, "cut {cut}");
        }
        let mut bad = data.clone();
        bad[FRAME_HEADER] ^= 1;
        assert_eq!(frame_at(&bad, 0), FrameAt::BadChecksum { len: 5 });
        assert_eq!(frame_at(&data, data.len()), FrameAt::End);
    }

    #[test]
    fn only_crash_shapes_of_one_append_are_torn() {
        let mut data = Vec::new();
        push_frame(&mut data, b"first");
        let p = data.len();
        push_frame(&mut data, &[7u8; 1200]);
        let end = data.len();
        // A prefix of the last frame, any length.
        for cut in p + 1..end {
            assert!(is_torn_append(&data[..cut], p), "cut {cut}");
        }
        // Zeros where sectors were never written.
        let mut zeroed = data.clone();
        zeroed[SECTOR..2 * SECTOR].fill(0);
        assert!(is_torn_append(&zeroed, p));
        let mut start_lost = data.clone();
        start_lost[p..SECTOR].fill(0);
        assert!(is_torn_append(&start_lost, p));
        let mut tail = data[..p].to_vec();
        tail.extend([0u8; 700]);
        assert!(is_torn_append(&tail, p));
        // A flipped bit in the whole last frame, a shortened length, a
        // damaged frame with a valid one after it: damage.
        let mut flipped = data.clone();
        flipped[end - 3] ^= 0x10;
        assert!(!is_torn_append(&flipped, p));
        let mut short = data.clone();
        short[p + 1] ^= 0x04;
        assert!(!is_torn_append(&short, p));
        let mut first = data.clone();
        first[2] ^= 0x40;
        assert!(
            !is_torn_append(&first, 0),
            "a later valid frame proves damage"
        );
    }

    #[test]
    fn record_offsets_near_the_top_of_u64_are_malformed_not_an_overflow() {
        let mut b = BatchBuilder::new(64);
        for _ in 0..3 {
            b.push((&sample()).into());
        }
        let frame = b.finish(u64::MAX - 1, 0).to_vec();
        let FrameAt::Valid { body, .. } = frame_at(&frame, 0) else {
            panic!("frame not valid")
        };
        assert!(decode_batch(body, |_, _| {}).is_err());
    }

    /// The widest delta the format carries, `u32::MAX`, is accepted: the
    /// batch then spans 2^32 offsets (the next delta overflowed a `u32`: a
    /// panic in debug builds, a wrapped span of 0 in release).
    #[test]
    fn a_record_at_the_widest_delta_spans_two_to_the_32_offsets() {
        let mut b = BatchBuilder::new(64);
        b.push((&sample()).into());
        b.push_with_delta(u32::MAX, (&sample()).into());
        assert_eq!(b.offset_span(), 1 << 32);
        let frame = b.finish(7, 0).to_vec();
        let FrameAt::Valid { body, .. } = frame_at(&frame, 0) else {
            panic!("frame not valid")
        };
        let mut offsets = Vec::new();
        decode_batch(body, |o, _| offsets.push(o)).unwrap();
        assert_eq!(offsets, [7, 7 + u64::from(u32::MAX)]);
    }

    /// Found by the fuzz target `batch_bodies_decode_or_err_and_round_trip`:
    /// a length of -2 read as null, so two bodies decoded to one batch and
    /// the round trip was not the identity. Only -1 is null.
    #[test]
    fn a_negative_length_other_than_minus_one_is_malformed() {
        let mut b = BatchBuilder::new(64);
        b.push((&Record::new(Some(b"k"), None, Timestamp(1))).into());
        let frame = b.finish(0, 0).to_vec();
        let mut body = frame[FRAME_HEADER..].to_vec();
        let value_len = BATCH_HEADER + 4 + 8 + 4 + 1;
        assert_eq!(body[value_len..value_len + 4], (-1i32).to_le_bytes());
        assert!(decode_batch(&body, |_, _| {}).is_ok());
        for bad in [-2i32, i32::MIN] {
            body[value_len..value_len + 4].copy_from_slice(&bad.to_le_bytes());
            assert!(decode_batch(&body, |_, _| {}).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::fuzz_cases()))]

        /// Arbitrary file bytes at an arbitrary position: a classification,
        /// never a panic.
        #[test]
        fn arbitrary_files_classify_without_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048), pos in 0usize..2100) {
            let _ = frame_at(&data, pos);
            if pos <= data.len() {
                let _ = is_torn_append(&data, pos);
            }
        }

        /// Arbitrary batch bodies (as if behind a valid checksum): records
        /// or an error, never a panic, and offsets never wrap.
        #[test]
        fn arbitrary_batch_bodies_decode_or_err(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512), base in proptest::prelude::any::<u64>()) {
            let _ = decode_batch(&body, |_, _| {});
            let _ = last_offset(&body);
            let mut with_base = body.clone();
            if with_base.len() >= 8 {
                with_base[..8].copy_from_slice(&base.to_le_bytes());
            }
            let mut prev = None;
            let _ = decode_batch(&with_base, |o, _| {
                assert!(o >= base);
                prev = Some(o);
            });
            let _ = fetched(&with_base, with_base.as_ptr() as usize, with_base.len(), 0, u64::MAX, &mut BatchSpans::default());
        }
    }
}
