//! The engine's own stores: the emit-frontier companion and the watermark store.
//!
//! Owns [`EmitFrontier`] (the highest close an on-window-close operator has emitted, in the
//! ordinary compacted key-value store `<store>-emitfrontier`) and [`WatermarkStore`] (the
//! last few barrier stamps and the graceful-flush marker, in `stoatflow-watermark`), with
//! the restart rule (docs/state.md#restart) in [`WatermarkStore::seed`].
//!
//! Both are thin typed wrappers over any [`KeyValueStore`](crate::KeyValueStore), so they are
//! changelogged, flushed and restored like every other store, with no code of their own on
//! those paths. This module never knows how stamps are taken or when barriers happen: it is
//! told barrier numbers and watermark values as plain numbers.

mod emit_frontier;
mod watermark;

pub use emit_frontier::{EmitFrontier, emit_frontier_store_name, in_memory_emit_frontier};
pub use watermark::{
    BarrierStamp, RETAINED_STAMPS, WATERMARK_STORE_NAME, WatermarkKey, WatermarkKeyCodec,
    WatermarkSeed, WatermarkStore, in_memory_watermark_store,
};
