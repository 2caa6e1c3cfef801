//! q5, hot items: the auctions with the most bids in each 10 s window,
//! sliding every 2 s.
//!
//! ```sql
//! SELECT auction, num FROM (count per auction per HOP(2 s, 10 s)) a
//! JOIN (max of num per window) m ON same window AND a.num >= m.maxn
//! ```
//!
//! As a Kafka Streams user writes it: re-key bids by auction, count them in
//! hopping windows emitted once each window closes, re-key the final counts
//! by window start and fold them into the window's maximum with every
//! auction that reaches it. The result is the table of hot items per window
//! start; its last update per window is the answer.

use std::time::Duration;

use stoatflow_streams::{
    EmitStrategy, Grouped, KStream, Materialized, Serde, SerdeError, Serdes, StreamsBuilder,
    TimeWindows, Windowed,
};

use crate::serdes::I64PairSerde;

/// The slide of q5's hopping windows.
pub const SLIDE: Duration = Duration::from_secs(2);

/// The auctions with the most bids in one window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HotItems {
    /// The largest bid count of the window.
    pub count: i64,
    /// The auctions with that count, in arrival order.
    pub auctions: Vec<i64>,
}

/// [`HotItems`] as bytes, for q5's store on disk: the count, the number of
/// auctions (`u32`) and each auction, big-endian.
#[derive(Debug, Clone, Copy, Default)]
pub struct HotItemsSerde;

impl Serde<HotItems> for HotItemsSerde {
    fn name(&self) -> &str {
        "hot-items"
    }
    fn serialize(&self, _: &str, v: &HotItems, out: &mut Vec<u8>) -> Result<(), SerdeError> {
        out.extend_from_slice(&v.count.to_be_bytes());
        out.extend_from_slice(&(v.auctions.len() as u32).to_be_bytes());
        for a in &v.auctions {
            out.extend_from_slice(&a.to_be_bytes());
        }
        Ok(())
    }
    fn deserialize(&self, topic: &str, b: &[u8]) -> Result<HotItems, SerdeError> {
        let bad = || SerdeError::Malformed {
            serde: "hot-items".into(),
            topic: topic.into(),
            len: b.len(),
            reason: "expected a count, a length and that many auctions".into(),
        };
        let i64_at = |at: usize| -> Option<i64> {
            Some(i64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
        };
        let count = i64_at(0).ok_or_else(bad)?;
        let n = b
            .get(8..12)
            .and_then(|n| n.try_into().ok())
            .map(u32::from_be_bytes)
            .ok_or_else(bad)? as usize;
        if b.len() - 12 != n.saturating_mul(8) {
            return Err(bad());
        }
        let auctions = (0..n)
            .map(|i| i64_at(12 + 8 * i).ok_or_else(bad))
            .collect::<Result<_, _>>()?;
        Ok(HotItems { count, auctions })
    }
}

/// Hot items per window start.
pub fn q5(builder: &mut StreamsBuilder, out_of_orderness: Duration) -> KStream<i64, HotItems> {
    super::bids(&super::events(builder, out_of_orderness))
        .map(|_, b| (b.auction, ()))
        .group_by_key_with(Grouped::with(Serdes::i64(), Serdes::unit()))
        .windowed_by(TimeWindows::of_size_with_no_grace(super::WINDOW).advance_by(SLIDE))
        .emit_strategy(EmitStrategy::on_window_close())
        .count_with(Materialized::as_("q5-bids-per-auction"))
        .to_stream()
        .skip_tombstones()
        .map(|w: Windowed<i64>, count| (w.window.start, (w.key, count)))
        .group_by_key_with(Grouped::with(Serdes::i64(), I64PairSerde))
        .aggregate(
            HotItems::default,
            |_, &(auction, count), mut hot: HotItems| {
                if count > hot.count {
                    hot.count = count;
                    hot.auctions.clear();
                }
                if count == hot.count {
                    hot.auctions.push(auction);
                }
                hot
            },
            Materialized::as_("q5-hot-items")
                .with_value_serde(HotItemsSerde)
                .with_logging_disabled(),
        )
        .to_stream()
        .skip_tombstones()
}
