//! Fuzz targets of every decoder an open and a read of the embedded log run
//! over bytes from disk: segment files (frames, the torn-tail rule, batch
//! bodies, the fetch path's spans), transaction-log entries, and whole
//! transaction-log generations as [`replay`](super::replay) reads them.
//!
//! Seeds come from the real encoders ([`BatchBuilder`], [`Entry::encode`],
//! [`push_frame`]); the harness (`stoatflow-fuzzing`) mutates them, writes
//! `u32::MAX`-like values over their length and count fields, and runs each
//! target in a child process with a bounded address space. Each target
//! asserts: no panic, an error returned as an error, and where there is an
//! encoder, encode(decode(x)) decoding to the same value.

use std::path::Path;

use proptest::prelude::*;
use stoatflow_fuzzing::{Tier, fuzz, inputs};

use super::super::EmbeddedConfig;
use super::super::format::{
    BatchBuilder, FRAME_HEADER, FrameAt, decode_batch, fetched, frame_at, is_torn_append,
    last_offset, push_frame,
};
use super::super::topics::Limits;
use super::super::txlog::{CommitPart, Entry, Meta};
use super::replay;
use crate::types::{
    BatchSpans, Offset, OffsetAndMetadata, Record, Retention, Timestamp, TopicPartition, TopicSpec,
};

fn records() -> Vec<Record> {
    vec![
        Record::new(Some(b"key"), Some(b"value"), Timestamp(1_700_000_000_000)),
        Record::new(None, Some(b""), Timestamp(-1)),
        Record::new(Some(b"k"), None, Timestamp(i64::MAX)).with_header("h", Some(b"v")),
        Record::new(None, None, Timestamp(0))
            .with_header("", None)
            .with_header("trace", Some(b"\xff\x00")),
    ]
}

/// Whole batch frames (header and body), each as the producer writes it.
fn batch_frames() -> Vec<Vec<u8>> {
    let rs = records();
    let mut frames = Vec::new();
    for (base, txn, take) in [(0u64, 0u64, 1usize), (7, 3, 2), (u64::MAX - 9, 1, 4)] {
        let mut b = BatchBuilder::new(64);
        for r in &rs[..take] {
            b.push(r.into());
        }
        frames.push(b.finish(base, txn).to_vec());
    }
    // A compacted batch: sparse deltas.
    let mut b = BatchBuilder::new(64);
    b.push_with_delta(2, (&rs[0]).into());
    b.push_with_delta(900, (&rs[2]).into());
    frames.push(b.finish(40, 0).to_vec());
    frames
}

fn batch_bodies() -> Vec<Vec<u8>> {
    batch_frames()
        .into_iter()
        .map(|f| f[FRAME_HEADER..].to_vec())
        .collect()
}

fn segment_files() -> Vec<Vec<u8>> {
    let frames = batch_frames();
    vec![frames[0].clone(), frames.concat(), frames[1..3].concat()]
}

/// A segment file: frames walked as a read and the recovery scan walk them,
/// until the first that is not valid, which is classified (torn tail or
/// damage). Valid frames' bodies decode or fail as errors.
#[test]
fn segment_files_walk_without_panic() {
    fuzz(
        module_path!(),
        "segment_files_walk_without_panic",
        Tier::DECODER,
        inputs(segment_files(), &[], 512),
        |data| {
            let mut pos = 0;
            loop {
                match frame_at(&data, pos) {
                    FrameAt::Valid { body, next } => {
                        prop_assert!(next > pos && next <= data.len());
                        let _ = last_offset(body);
                        let mut spans = BatchSpans::default();
                        let _ = fetched(
                            body,
                            data.as_ptr() as usize,
                            data.len() - pos,
                            0,
                            u64::MAX,
                            &mut spans,
                        );
                        pos = next;
                    }
                    FrameAt::End => break,
                    other => {
                        prop_assert!(!other.reason().is_empty());
                        let _ = is_torn_append(&data, pos);
                        break;
                    }
                }
            }
            Ok(())
        },
    );
}

/// A batch body behind a valid checksum: records or an error; records
/// re-encoded by the batch builder decode to the same batch, byte for byte
/// when the stored maximum timestamp is the records' own; the fetch path
/// takes exactly the records in its range.
#[test]
fn batch_bodies_decode_or_err_and_round_trip() {
    fuzz(
        module_path!(),
        "batch_bodies_decode_or_err_and_round_trip",
        Tier::DECODER,
        (inputs(batch_bodies(), &[], 256), any::<u64>(), any::<u64>()),
        |(body, from, to)| {
            let mut got = Vec::new();
            let Ok(hdr) = decode_batch(&body, |o, r| got.push((o, r))) else {
                return Ok(());
            };
            prop_assert_eq!(got.len(), hdr.count as usize);
            prop_assert_eq!(last_offset(&body).ok(), Some(got.last().map(|(o, _)| *o)));
            let mut spans = BatchSpans::default();
            let last = fetched(
                &body,
                body.as_ptr() as usize,
                body.len(),
                from,
                to,
                &mut spans,
            );
            let in_range = got.iter().filter(|(o, _)| (from..to).contains(o));
            prop_assert_eq!(
                last.ok(),
                Some(in_range.clone().map(|(o, _)| *o).next_back())
            );
            prop_assert_eq!(spans.is_empty(), in_range.count() == 0);
            // Re-encode (the builder's deltas stop below u32::MAX).
            if got.iter().any(|(o, _)| o - hdr.base >= u64::from(u32::MAX)) {
                return Ok(());
            }
            let mut b = BatchBuilder::new(body.len());
            for (o, r) in &got {
                b.push_with_delta((o - hdr.base) as u32, r.into());
            }
            let max_ts = b.max_ts();
            let again = b.finish(hdr.base, hdr.txn)[FRAME_HEADER..].to_vec();
            let mut regot = Vec::new();
            let rehdr = decode_batch(&again, |o, r| regot.push((o, r)));
            prop_assert_eq!(&regot, &got);
            prop_assert_eq!(
                rehdr.ok().map(|h| (h.base, h.count, h.txn)),
                Some((hdr.base, hdr.count, hdr.txn))
            );
            if max_ts == hdr.max_ts {
                prop_assert_eq!(again, body);
            }
            Ok(())
        },
    );
}

fn entries() -> Vec<Entry> {
    let spec = TopicSpec::new("t", 2).with_retention(Retention {
        bytes: Some(10),
        time: Some(std::time::Duration::from_millis(60_000)),
    });
    let tp = TopicPartition::new("t", 1);
    let part = |partition, end| CommitPart {
        tp: TopicPartition::new("t", partition),
        base: 0,
        end,
    };
    let committed = |group: &str, partition| {
        let time = crate::offset_metadata::PartitionMetadata::with_partition_time(-1);
        let metadata = crate::offset_metadata::encode(&time);
        let tp = TopicPartition::new("t", partition);
        (
            group.to_string(),
            tp,
            OffsetAndMetadata {
                offset: Offset(5),
                metadata,
            },
        )
    };
    let commit = Entry::Commit {
        txn: 0,
        tid: "app-0".into(),
        epoch: 0,
        parts: vec![part(1, 9), part(0, 2)],
        offsets: vec![committed("g", 0), committed("", 1)],
    };
    let mut es = vec![
        Entry::TopicCreated(spec),
        Entry::TopicCreated(TopicSpec::new("c", 1).compacted()),
        Entry::ProducerInit {
            tid: "app-0".into(),
            epoch: 0,
        },
        commit,
        Entry::LogStart { tp, start: 4 },
    ];
    let mut meta = Meta::default();
    for e in &es {
        meta.apply(e);
    }
    es.insert(0, Entry::Checkpoint(meta));
    es
}

/// A transaction-log entry body behind a valid checksum: an entry or an
/// error, and an entry encodes back to one that decodes equal (and, but for
/// a checkpoint, whose maps are re-sorted, to the same bytes).
#[test]
fn transaction_log_entries_decode_or_err_and_round_trip() {
    let seeds = entries().iter().map(Entry::encode).collect();
    fuzz(
        module_path!(),
        "transaction_log_entries_decode_or_err_and_round_trip",
        Tier::DECODER,
        inputs(seeds, &[], 256),
        |body| {
            let Ok(e) = Entry::decode(&body) else {
                return Ok(());
            };
            let again = e.encode();
            let decoded = Entry::decode(&again).ok();
            prop_assert_eq!(decoded.as_ref(), Some(&e));
            if !matches!(e, Entry::Checkpoint(_)) {
                prop_assert_eq!(again, body);
            }
            Ok(())
        },
    );
}

/// A generation of the transaction log as written: its entries, framed.
fn framed(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        push_frame(&mut out, &e.encode());
    }
    out
}

/// A whole transaction-log generation, as the open replays it: the file's
/// bytes mutated (checksums mostly fail: the torn-tail rule), and entry
/// bodies mutated then framed with valid checksums (every entry reaches the
/// decoder, the replay rules and the topic limits, which must refuse a
/// topic of `u32::MAX` partitions before allocating for it). A replay that
/// succeeds replays again, from its own entries re-framed, to the same state.
#[test]
fn transaction_log_generations_replay_or_err() {
    let es = entries();
    let first = framed(&es[1..]);
    let rotated = framed(&es);
    let bodies: Vec<Vec<u8>> = es.iter().map(Entry::encode).collect();
    let limits = Limits::of(&EmbeddedConfig::default());
    let path = Path::new("txlog");
    fuzz(
        module_path!(),
        "transaction_log_generations_replay_or_err",
        Tier::DECODER,
        (
            0u64..2,
            inputs(vec![first, rotated], &[], 512),
            proptest::collection::vec(inputs(bodies, &[], 128), 0..7),
            any::<bool>(),
        ),
        |(generation, file, bodies, reframe)| {
            let data = if reframe {
                let mut out = Vec::new();
                for b in &bodies {
                    push_frame(&mut out, b);
                }
                out
            } else {
                file
            };
            let Ok(replayed) = replay(path, generation, &data, &limits) else {
                return Ok(());
            };
            prop_assert!(replayed.end as usize <= data.len());
            let entries: Vec<Entry> = replayed.entries.into_iter().map(|(_, e)| e).collect();
            let again = replay(path, generation, &framed(&entries), &limits);
            prop_assert_eq!(again.ok().map(|r| r.meta), Some(replayed.meta));
            Ok(())
        },
    );
}
