//! `stoatflow log topics|produce|consume|describe --dir DIR`: the embedded
//! log by hand, to inspect outputs and changelogs. Keys and values print as
//! text when they are UTF-8, else as hex.
//!
//! Owns the line formats (`key<TAB>value[<TAB>timestamp-ms]` in, one line
//! per record out) and the progress bars; the log is `stoatflow::log`'s.
//! When another process holds the directory (a running `stoatflow run`),
//! every command goes through that application instead (`log_remote`).

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::out::{noteln, outln, sayln};
use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use stoatflow::log::{
    Consumer, EmbeddedLog, FetchedRecord, Log, Record, SeekTo, Timestamp, TopicPartition, TopicSpec,
};
use stoatflow::{Clock, SystemClock, WallTime, partition_for_key};

use crate::log_remote::{Running, Transactions, is_locked};

/// Records per transaction when producing.
const BATCH: usize = 10_000;

/// The log in a directory: opened by the command, or held by a running
/// application that serves it.
enum Held {
    Open(EmbeddedLog),
    Running(Running),
}

fn open(dir: &Path) -> anyhow::Result<Held> {
    if !dir.is_dir() {
        bail!("{}: no such directory", dir.display());
    }
    match EmbeddedLog::open(dir) {
        Ok(log) => Ok(Held::Open(log)),
        Err(e) if is_locked(&e) => Ok(Held::Running(Running::find(dir)?)),
        Err(e) => Err(e).with_context(|| format!("opening the embedded log in {}", dir.display())),
    }
}

fn partitions_of(log: &EmbeddedLog, topic: &str) -> anyhow::Result<u32> {
    Ok(log
        .describe_topic(topic)?
        .with_context(|| format!("topic {topic} does not exist (see `stoatflow log topics`)"))?
        .partitions)
}

/// `log topics`.
pub fn topics(dir: &Path) -> anyhow::Result<()> {
    let log = match open(dir)? {
        Held::Open(log) => log,
        Held::Running(app) => {
            for t in app.topics()? {
                outln!("{}\t{}", t.name, t.shape)?;
            }
            return Ok(());
        }
    };
    for spec in log.topics() {
        outln!("{}\t{}", spec.name, spec.shape)?;
    }
    Ok(())
}

/// `log describe`.
pub fn describe(dir: &Path, topic: &str) -> anyhow::Result<()> {
    let log = match open(dir)? {
        Held::Open(log) => log,
        Held::Running(app) => {
            let t = app.topic(topic)?;
            outln!("topic {topic}: {}", t.shape)?;
            for (p, begin, end) in t.partitions {
                outln!(
                    "  partition {p}: offsets {begin}..{end} ({} committed records visible)",
                    end.saturating_sub(begin)
                )?;
            }
            return Ok(());
        }
    };
    let spec = log
        .topics()
        .into_iter()
        .find(|s| s.name == topic)
        .with_context(|| format!("topic {topic} does not exist"))?;
    outln!("topic {topic}: {}", spec.shape)?;
    let mut consumer = log.consumer("stoatflow-cli-describe")?;
    for p in 0..spec.shape.partitions {
        let tp = TopicPartition::new(topic, p);
        consumer.assign(std::slice::from_ref(&tp))?;
        let begin = consumer.beginning_offset(&tp)?;
        let end = consumer.end_offset(&tp)?;
        outln!(
            "  partition {p}: offsets {}..{} ({} committed records visible)",
            begin.0,
            end.0,
            end.0.saturating_sub(begin.0)
        )?;
    }
    Ok(())
}

/// `log produce`: one record per line of `input`.
pub fn produce(
    dir: &Path,
    topic: &str,
    partition: Option<u32>,
    create_partitions: u32,
    input: impl BufRead,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let (partitions, mut producer): (u32, Box<dyn Transactions>) = match open(dir)? {
        Held::Open(log) => {
            if log.describe_topic(topic)?.is_none() {
                log.create_topic(&TopicSpec::new(topic, create_partitions))?;
            }
            let producer = log.transactional_producer("stoatflow-cli-produce")?;
            (partitions_of(&log, topic)?, Box::new(producer))
        }
        Held::Running(app) => {
            let partitions = app.topic(topic)?.partitions.len() as u32;
            (partitions, Box::new(app.producer(topic)))
        }
    };
    if let Some(p) = partition.filter(|p| *p >= partitions) {
        bail!("topic {topic} has {partitions} partitions; there is no partition {p}");
    }
    let bar =
        crate::out::bar(ProgressBar::new_spinner().with_message(format!("producing to {topic}")));
    bar.set_style(ProgressStyle::with_template(
        "{spinner} {msg}: {pos} records ({per_sec})",
    )?);
    let now = SystemClock.now().as_millis();
    let (mut n, mut in_batch) = (0u64, 0usize);
    producer.begin()?;
    for (i, line) in input.lines().enumerate() {
        let line = line.with_context(|| format!("reading line {}", i + 1))?;
        if line.is_empty() {
            continue;
        }
        let mut fields = line.splitn(3, '\t');
        let first = fields.next().unwrap_or_default();
        let (key, value) = match fields.next() {
            Some(value) => (Some(first), value),
            None => (None, first),
        };
        let timestamp = match fields.next() {
            Some(t) => crate::timestamp::parse(t).map_err(|e| {
                let key = key.map_or("no key".to_owned(), |k| format!("key {k:?}"));
                anyhow::anyhow!("line {} ({key}): {e}", i + 1)
            })?,
            None => now,
        };
        let p = partition.unwrap_or_else(|| match key {
            Some(k) => partition_for_key(k.as_bytes(), partitions),
            None => (n % u64::from(partitions)) as u32,
        });
        let record = Record::new(
            key.map(str::as_bytes),
            Some(value.as_bytes()),
            Timestamp(timestamp),
        );
        producer.send(&TopicPartition::new(topic, p), &record)?;
        n += 1;
        in_batch += 1;
        bar.set_position(n);
        if in_batch == BATCH {
            producer.commit()?;
            producer.begin()?;
            in_batch = 0;
        }
    }
    producer.commit()?;
    bar.finish_and_clear();
    sayln!("produced {n} records to {topic}")?;
    Ok(())
}

/// Text if UTF-8, else `0x` and hex; `null` for none.
fn show(bytes: Option<&[u8]>) -> String {
    match bytes {
        None => "null".into(),
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) if !s.chars().any(char::is_control) => s.to_owned(),
            _ => {
                let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
                format!("0x{hex}")
            }
        },
    }
}

/// One consumed record as a line of `out`.
fn write_record(out: &mut impl Write, r: &FetchedRecord) -> std::io::Result<()> {
    let headers: Vec<String> = r
        .record
        .headers
        .iter()
        .map(|h| format!("{}={}", h.key, show(h.value.as_deref())))
        .collect();
    writeln!(
        out,
        "partition={} offset={} timestamp={} ({}) key={} value={} headers=[{}]",
        r.partition.partition.0,
        r.offset.0,
        r.record.timestamp.0,
        WallTime::from_millis(r.record.timestamp.0).to_iso8601(),
        show(r.record.key.as_deref()),
        show(r.record.value.as_deref()),
        headers.join(",")
    )
}

/// `log consume`: every committed record from the beginning to the end
/// offsets as of the call; with `follow`, on as records are committed
/// until the flag is set (a signal).
pub fn consume(
    dir: &Path,
    topic: &str,
    partition: Option<u32>,
    max: Option<u64>,
    follow: Option<&AtomicBool>,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let log = match open(dir)? {
        Held::Open(log) => log,
        Held::Running(app) => {
            let partitions: Vec<u32> = match partition {
                Some(p) => vec![p],
                None => (0..app.topic(topic)?.partitions.len() as u32).collect(),
            };
            let limit = max.unwrap_or(u64::MAX);
            let n = app.consume(topic, &partitions, limit, follow, |r| {
                Ok(write_record(out, r)?)
            })?;
            noteln!("{n} records from {topic}");
            return Ok(());
        }
    };
    let partitions = partitions_of(&log, topic)?;
    let tps: Vec<TopicPartition> = match partition {
        Some(p) if p >= partitions => {
            bail!("topic {topic} has {partitions} partitions; there is no partition {p}")
        }
        Some(p) => vec![TopicPartition::new(topic, p)],
        None => (0..partitions)
            .map(|p| TopicPartition::new(topic, p))
            .collect(),
    };
    let mut consumer = log.consumer("stoatflow-cli-consume")?;
    consumer.assign(&tps)?;
    let mut ends = Vec::new();
    let mut total = 0;
    for tp in &tps {
        consumer.seek(tp, SeekTo::Beginning)?;
        let begin = consumer.position(tp)?;
        let end = consumer.end_offset(tp)?;
        total += end.0.saturating_sub(begin.0);
        ends.push(end);
    }
    let limit = max.unwrap_or(u64::MAX);
    let bar = crate::out::bar(ProgressBar::new(total.min(limit)));
    bar.set_style(ProgressStyle::with_template(
        "{bar:40} {pos}/{len} records ({per_sec})",
    )?);
    let mut n = 0u64;
    'read: loop {
        let mut behind = false;
        for (tp, end) in tps.iter().zip(&ends) {
            behind |= consumer.position(tp)? < *end;
        }
        match follow {
            None if !behind => break,
            Some(stop) if stop.load(Ordering::Acquire) => break,
            _ => {}
        }
        for r in consumer.fetch(Duration::from_millis(50))? {
            if n == limit {
                break 'read;
            }
            write_record(out, &r)?;
            n += 1;
            bar.set_position(n);
        }
    }
    bar.finish_and_clear();
    noteln!("{n} records from {topic}");
    Ok(())
}
