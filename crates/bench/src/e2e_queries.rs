//! The rest of the benchmark queries end to end, beside the tumbling count
//! and q5 of [`crate::e2e`]: Nexmark q7 and q8, the sliding and session
//! counts, and the inner and left windowed joins, each the task path's
//! topology ([`crate::queries`], [`crate::workloads`]) with its results
//! serialized to the output topic, run through the runtime on the embedded
//! log in a fresh directory as [`crate::e2e`] runs the other two.
//!
//! Inputs, written before the clock starts (two partitions each):
//! - q7, q8: the generator's events, as q5's run writes them;
//! - sliding, session: [`windowed_record`] `i` as key and time, value 1,
//!   partitioned by key;
//! - the joins: pair `i` of [`join_record`], the left record then the right
//!   one, each with value `i`, on their two topics, partitioned by key.
//!
//! q7 and q8 cross repartition topics, so their clock stops at the last
//! barrier before the application went quiet, as q5's; the others' at the
//! end of `close()`, as the tumbling count's.
//!
//! This module owns the queries' end-to-end shapes; how a run is timed,
//! measured and digested is [`crate::e2e`]'s.

use stoatflow_log::{Record, Timestamp};
use stoatflow_streams::{Produced, Serdes, StreamsBuilder, Topology};

use crate::e2e::{
    E2E_PARTITIONS, E2eResult, E2eStores, Latency, OUTPUT, RunDir, output_digest, run_app,
    write_nexmark, write_topics,
};
use crate::error::BenchError;
use crate::nexmark::{GeneratorConfig, out_of_orderness};
use crate::queries::{self, WINDOW};
use crate::serdes::{BidSerde, I64OptionPairSerde, I64PairSerde};
use crate::workloads::{
    self, LEFT_TOPIC, RIGHT_TOPIC, SLIDING_DIFFERENCE, WINDOWED_TOPIC, join_record, windowed_record,
};

/// A benchmark query with an end-to-end run here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum E2eQuery {
    /// Nexmark q7, the highest bids, keyed by one constant key
    /// ([`queries::q7_keyed`]).
    Q7,
    /// Nexmark q8, new users who sold in their first window.
    Q8,
    /// The sliding count.
    Sliding,
    /// The session count.
    Session,
    /// The 1 s inner join.
    JoinInner,
    /// The 1 s left join.
    JoinLeft,
}

impl E2eQuery {
    /// Every one, in report order.
    pub const ALL: &'static [E2eQuery] = &[
        E2eQuery::Q7,
        E2eQuery::Q8,
        E2eQuery::Sliding,
        E2eQuery::Session,
        E2eQuery::JoinInner,
        E2eQuery::JoinLeft,
    ];

    /// The task path's name of the query (`q7`, `join-left`, ...).
    pub fn name(self) -> &'static str {
        match self {
            E2eQuery::Q7 => "q7",
            E2eQuery::Q8 => "q8",
            E2eQuery::Sliding => "sliding",
            E2eQuery::Session => "session",
            E2eQuery::JoinInner => "join-inner",
            E2eQuery::JoinLeft => "join-left",
        }
    }

    /// Whether its results cross a repartition topic after the input is
    /// consumed (the run then waits until the application goes quiet).
    fn drains(self) -> bool {
        matches!(self, E2eQuery::Q7 | E2eQuery::Q8)
    }

    fn topology(self, generator: &GeneratorConfig) -> Result<Topology, BenchError> {
        let ooo = out_of_orderness(generator);
        let mut b = StreamsBuilder::new();
        let window_ms = WINDOW.as_millis() as i64;
        match self {
            E2eQuery::Q7 => {
                queries::q7_keyed(&mut b, ooo).to(OUTPUT, Produced::with(Serdes::i64(), BidSerde));
            }
            E2eQuery::Q8 => queries::q8(&mut b, ooo).to(
                OUTPUT,
                Produced::with(
                    Serdes::time_windowed(Serdes::i64(), window_ms),
                    Serdes::string(),
                ),
            ),
            E2eQuery::Sliding => workloads::sliding(&mut b).to(
                OUTPUT,
                Produced::with(
                    Serdes::time_windowed(Serdes::i64(), SLIDING_DIFFERENCE.as_millis() as i64),
                    Serdes::i64(),
                ),
            ),
            E2eQuery::Session => workloads::session(&mut b).to(
                OUTPUT,
                Produced::with(Serdes::session_windowed(Serdes::i64()), Serdes::i64()),
            ),
            E2eQuery::JoinInner => workloads::join_inner(&mut b)
                .to(OUTPUT, Produced::with(Serdes::i64(), I64PairSerde)),
            E2eQuery::JoinLeft => workloads::join_left(&mut b)
                .to(OUTPUT, Produced::with(Serdes::i64(), I64OptionPairSerde)),
        }
        b.build().map_err(|source| BenchError::Topology {
            query: self.name(),
            source,
        })
    }

    /// A fresh log in `dir` holding the query's `events` input records.
    fn write_input(
        self,
        dir: &RunDir,
        events: u64,
        generator: &GeneratorConfig,
    ) -> Result<std::sync::Arc<stoatflow_log::EmbeddedLog>, BenchError> {
        let i64_record = |key: i64, value: i64, ts: i64| {
            let record = Record::new(
                Some(&key.to_be_bytes()),
                Some(&value.to_be_bytes()),
                Timestamp(ts),
            );
            (key as u32 % E2E_PARTITIONS, record)
        };
        match self {
            E2eQuery::Q7 | E2eQuery::Q8 => write_nexmark(dir, events, generator),
            E2eQuery::Sliding | E2eQuery::Session => write_topics(
                dir,
                &[WINDOWED_TOPIC],
                (0..events).map(|i| {
                    let (key, ts) = windowed_record(i);
                    let (p, record) = i64_record(key, 1, ts);
                    (0, p, record)
                }),
            ),
            E2eQuery::JoinInner | E2eQuery::JoinLeft => write_topics(
                dir,
                &[LEFT_TOPIC, RIGHT_TOPIC],
                (0..events).map(|j| {
                    let i = j / 2;
                    let (left, right, ts) = join_record(i);
                    let side = (j % 2) as usize;
                    let key = if side == 0 { left } else { right };
                    let (p, record) = i64_record(key, i as i64, ts);
                    (side, p, record)
                }),
            ),
        }
    }
}

/// Runs `query` end to end on `lanes` lanes over `events` input records
/// (the join's: both sides together). Prints its barrier and resources lines
/// first, named `e2e-<query>-<lanes>-lane`.
pub fn run_e2e(
    query: E2eQuery,
    events: u64,
    lanes: usize,
    generator: &GeneratorConfig,
    stores: E2eStores,
) -> Result<E2eResult, BenchError> {
    let dir = RunDir::new()?;
    let log = query.write_input(&dir, events, generator)?;
    let run = run_app(
        query.topology(generator)?,
        &log,
        (&dir, stores),
        lanes,
        query.drains(),
    )?;
    let latency = Latency::of_closes(&run.timeline, std::iter::empty());
    let name = format!("e2e-{}-{lanes}-lane", query.name());
    println!("{}", latency.line(&name));
    println!("{}", run.resources_line(&name, stores, events, &dir));
    Ok(E2eResult {
        seconds: run.seconds,
        outputs: run.outputs,
        digest: output_digest(&log, OUTPUT)?,
    })
}
