//! Compaction's memory on a partition with many more distinct keys than its
//! map holds: the process's peak resident memory during the passes grows by
//! the map's budget and a few read and write buffers, not by the partition.
//! A test binary of its own, so that nothing else runs in the process while
//! it measures (Linux: `/proc/self/status`, peak reset through
//! `/proc/self/clear_refs`).

use std::collections::HashMap;

use stoatflow_log::contract::read_to_end;
use stoatflow_log::{
    EmbeddedConfig, EmbeddedLog, Log, Record, Timestamp, TopicPartition, TopicSpec,
    TransactionalProducer,
};

const MIB: u64 = 1 << 20;

/// A line of `/proc/self/status` in bytes.
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    let kb: u64 = line
        .trim_start_matches(field)
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .expect("a number of kB");
    kb * 1024
}

#[test]
fn compaction_memory_is_its_map_budget_and_a_few_buffers() {
    let map_budget: usize = 1 << 20;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = EmbeddedConfig {
        segment_bytes: 4 * MIB,
        compaction_map_bytes: map_budget,
        min_cleanable_dirty_ratio: 0.0,
        ..EmbeddedConfig::default()
    };
    let log = EmbeddedLog::open_with(dir.path(), config).expect("open");
    let tp = TopicPartition::new("cl", 0);
    log.create_topic(&TopicSpec::new("cl", 1).compacted())
        .expect("create");
    // 100,000 keys, each written twice (about 32 MiB); the map holds about
    // 33,000 keys a pass.
    let keys = 100_000u32;
    let mut latest = HashMap::new();
    let mut p = log.transactional_producer("fill").expect("producer");
    let mut offset = 0u64;
    for round in 0..2u32 {
        for chunk in (0..keys).collect::<Vec<_>>().chunks(2_000) {
            p.begin().expect("begin");
            for k in chunk {
                let key = format!("key-{k:08}");
                let mut value = vec![round as u8; 140];
                value[..4].copy_from_slice(&k.to_be_bytes());
                p.send(
                    &tp,
                    &Record::new(Some(key.as_bytes()), Some(&value), Timestamp(1)),
                )
                .expect("send");
                latest.insert(key.into_bytes(), (offset, value));
                offset += 1;
            }
            p.commit().expect("commit");
        }
    }
    drop(p);
    let data = std::fs::read_dir(dir.path().join("topics/cl/0"))
        .expect("partition dir")
        .map(|e| e.expect("entry").metadata().expect("metadata").len())
        .sum::<u64>();
    assert!(data > 28 * MIB, "{data} bytes");

    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak resident memory");
    let resident = status_bytes("VmRSS:");
    let mut passes = 0;
    loop {
        let report = log.maintain(Timestamp(0)).expect("maintain");
        assert!(
            report.compaction_map_bytes <= map_budget as u64,
            "{report:?}"
        );
        if report.compacted_partitions == 0 {
            break;
        }
        passes += 1;
    }
    let peak = status_bytes("VmHWM:");
    let grown = peak.saturating_sub(resident);
    assert!(
        passes >= 3,
        "the map holds a third of the keys: {passes} passes"
    );
    // The map, a read chunk, the largest batch (1 MiB) read whole, the
    // batch being written, the allocator's slack.
    assert!(
        grown <= map_budget as u64 + 4 * MIB,
        "the peak resident memory grew by {grown} bytes over {passes} passes of a {data}-byte partition"
    );

    // The result: every key's latest record, at its offset; of the
    // superseded ones, only those superseded in the active segment (never
    // compacted) and closed segments' last records.
    let segments: Vec<u64> = std::fs::read_dir(dir.path().join("topics/cl/0"))
        .expect("partition dir")
        .map(|e| {
            let name = e.expect("entry").file_name();
            let name = name.to_string_lossy();
            name.trim_end_matches(".seg")
                .parse()
                .expect("a segment name")
        })
        .collect();
    let active = segments.iter().copied().max().expect("a segment");
    let mut c = log.consumer("check").expect("consumer");
    let got = read_to_end(&mut c, &[tp]);
    let mut seen = 0;
    let mut superseded = 0;
    for r in &got {
        let key = r.record.key.clone().expect("keyed");
        let (offset, value) = &latest[&key];
        if r.offset.0 == *offset {
            assert_eq!(r.record.value.as_ref(), Some(value));
            seen += 1;
        } else {
            assert!(r.offset.0 < *offset, "nothing after a key's latest");
            if *offset < active {
                superseded += 1;
            }
        }
    }
    assert_eq!(seen, latest.len(), "every key's latest record is kept");
    assert!(
        superseded < segments.len(),
        "{superseded} superseded records left in {} segments",
        segments.len()
    );
}
