//! The key order for a key codec whose byte order is not it (docs/state.md#key-order).
//!
//! Owns what the persistent stores share when their key codec does not preserve order
//! ([`Codec::preserves_order`](crate::Codec::preserves_order) is false): opening a window or
//! session store's [`SegmentedCore`] so that the store keeps the codec ([`open_core`]), and
//! putting a flush's records in the order of their decoded keys ([`flush_in_key_order`],
//! [`sort_flushed`]). The stores bound and sort their multi-key answers by decoded key
//! themselves. Single-key reads and everything an order-preserving codec does keep the
//! byte order, at no extra cost.
//!
//! This module never knows the on-disk layouts nor the queries.

use std::sync::Arc;

use super::segmented::{DiskLayout, SegmentedCore};
use super::{PersistentConfig, decode_stored};
use crate::changelog::ChangelogRecord;
use crate::changelog_batch::ChangelogBatch;
use crate::codec::Codec;
use crate::error::StateError;
use crate::segments::SegmentedConfig;
use crate::store::StoreConfig;

/// A key codec whose byte order is not the key order, kept by a store to decode keys for
/// the key order; `None` for an order-preserving codec.
pub(crate) type KeyOrder<K> = Option<Arc<dyn Codec<K>>>;

/// Opens a segmented core, with the key codec to keep for the key order if it does not
/// preserve order (then shared with the core; an order-preserving one goes to the core as
/// it is, with no indirection added on its path).
pub(crate) fn open_core<K, V, L: DiskLayout>(
    persistent: &PersistentConfig,
    config: StoreConfig,
    segmented: SegmentedConfig,
    key_codec: impl Codec<K> + 'static,
    value_codec: impl Codec<V> + 'static,
) -> Result<(SegmentedCore<K, V, L>, KeyOrder<K>), StateError> {
    if key_codec.preserves_order() {
        let core = SegmentedCore::open(persistent, config, segmented, key_codec, value_codec)?;
        return Ok((core, None));
    }
    let shared = Arc::new(key_codec);
    let core = SegmentedCore::open(persistent, config, segmented, shared.clone(), value_codec)?;
    Ok((core, Some(shared)))
}

/// The core's flush, its records put in id order by decoded key ((start, key) for
/// windows, (key, end, start) for sessions, as the in-memory engine writes them) when
/// `key_order` holds a codec. A key that does not decode (a codec that cannot read what it
/// wrote: a broken codec) is an error, with none of the flush's records in `out` (the
/// core has already forgotten them).
pub(crate) fn flush_in_key_order<K: Ord, V, L: DiskLayout>(
    core: &mut SegmentedCore<K, V, L>,
    key_order: &KeyOrder<K>,
    out: &mut ChangelogBatch,
) -> Result<(), StateError> {
    let first = out.len();
    core.flush_changelog(out)?;
    let Some(codec) = key_order else {
        return Ok(());
    };
    let name = core.name();
    sort_flushed(out, first, |record_key| {
        let (key, window) =
            L::split_changelog_key(record_key).ok_or_else(|| StateError::Engine {
                store: name.to_string(),
                detail: format!("flushed key {} is too short", crate::error::hex(record_key)),
            })?;
        Ok(L::id(
            decode_stored(&**codec, key, "key", name, key)?,
            window,
        ))
    })
    .inspect_err(|_| out.truncate(first))
}

/// Puts the records of `out` from index `first` on in the order of `order(record key)`,
/// stably (records of equal order keep theirs). Leaves `out` as it was if they already are,
/// or if `order` fails on a record (its error is returned).
pub(crate) fn sort_flushed<O: Ord>(
    out: &mut ChangelogBatch,
    first: usize,
    order: impl Fn(&[u8]) -> Result<O, StateError>,
) -> Result<(), StateError> {
    let mut keyed: Vec<(O, usize)> = Vec::with_capacity(out.len().saturating_sub(first));
    for i in first..out.len() {
        let record = out.get(i).expect("an index below the batch's length");
        keyed.push((order(record.key)?, i));
    }
    if keyed.is_sorted_by(|a, b| a.0 <= b.0) {
        return Ok(());
    }
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    let records: Vec<ChangelogRecord> = keyed
        .iter()
        .map(|&(_, i)| {
            out.get(i)
                .expect("an index below the batch's length")
                .to_record()
        })
        .collect();
    out.truncate(first);
    for r in &records {
        out.push(&r.key, r.value.as_deref(), r.timestamp);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(keys: &[u8]) -> ChangelogBatch {
        let mut b = ChangelogBatch::new();
        for (i, &k) in keys.iter().enumerate() {
            let value = [k, 1];
            b.push(&[k], (k % 2 == 0).then_some(&value[..]), i as i64);
        }
        b
    }

    #[test]
    fn sorts_only_the_records_from_first_on_stably_with_their_values() {
        let mut b = batch(&[9, 5, 3, 8, 4]);
        // By the key divided by 4: 5 and 4 tie and keep their order.
        sort_flushed(&mut b, 1, |k| Ok(k[0] / 4)).unwrap();
        let got: Vec<(u8, Option<Vec<u8>>, i64)> = b
            .iter()
            .map(|r| (r.key[0], r.value.map(<[u8]>::to_vec), r.timestamp))
            .collect();
        assert_eq!(
            got,
            vec![
                (9, None, 0),
                (3, None, 2),
                (5, None, 1),
                (4, Some(vec![4, 1]), 4),
                (8, Some(vec![8, 1]), 3),
            ]
        );
    }

    #[test]
    fn a_failing_order_leaves_the_batch_as_it_was() {
        let mut b = batch(&[2, 1]);
        let before = b.clone();
        let err = sort_flushed(&mut b, 0, |k| match k[0] {
            1 => Err(StateError::Engine {
                store: "s".into(),
                detail: "bad key".into(),
            }),
            k => Ok(k),
        });
        assert!(err.is_err());
        assert_eq!(b, before);
    }
}
