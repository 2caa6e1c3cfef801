//! Codecs that refuse a key or value: the store reports which store and which key, and
//! loses nothing it had accepted (a user serializer failing at the barrier flush must not
//! kill the process, nor drop the other keys of the epoch).

use stoatflow_state::{
    ChangelogBatch, ChangelogRecord, Codec, CodecError, I64Codec, InMemoryKeyValueStore,
    InMemorySessionStore, InMemoryWindowStore, KeyValueStore, PersistentConfig,
    PersistentKeyValueStore, PersistentSessionStore, PersistentWindowStore, SessionStore,
    SessionWindow, StateError, StateStore, StoreConfig, StringCodec, WindowStore,
};

use crate::engines::segmented;

/// `i64` big-endian, refusing negative values.
#[derive(Debug)]
struct NoNegatives;

impl Codec<i64> for NoNegatives {
    fn encode(&self, value: &i64, out: &mut Vec<u8>) -> Result<(), CodecError> {
        if *value < 0 {
            return Err(CodecError::new(format!("refused {value}")));
        }
        I64Codec.encode(value, out)
    }
    fn decode(&self, bytes: &[u8]) -> Result<i64, CodecError> {
        I64Codec.decode(bytes)
    }
}

/// UTF-8, refusing the key `bad`.
#[derive(Debug)]
struct NoBadKey;

impl Codec<String> for NoBadKey {
    fn encode(&self, value: &String, out: &mut Vec<u8>) -> Result<(), CodecError> {
        if value == "bad" {
            return Err(CodecError::new("refused key"));
        }
        StringCodec.encode(value, out)
    }
    fn decode(&self, bytes: &[u8]) -> Result<String, CodecError> {
        StringCodec.decode(bytes)
    }
}

/// One store of each shape, written through a uniform `write(key, value)` at time 10.
enum Shaped {
    Kv(Box<dyn KeyValueStore<String, i64>>),
    Window(Box<dyn WindowStore<String, i64>>),
    Session(Box<dyn SessionStore<String, i64>>),
}

impl Shaped {
    fn write(&mut self, key: &str, value: i64) -> Result<(), StateError> {
        let key = key.to_string();
        match self {
            Shaped::Kv(s) => s.put(key, value, 10),
            Shaped::Window(s) => s.put(key, 0, value, 10),
            Shaped::Session(s) => s.put(key, SessionWindow::new(0, 10), value, 10),
        }
    }

    fn store(&mut self) -> &mut dyn StateStore {
        match self {
            Shaped::Kv(s) => &mut **s,
            Shaped::Window(s) => &mut **s,
            Shaped::Session(s) => &mut **s,
        }
    }

    fn flush(&mut self) -> Result<Vec<ChangelogRecord>, StateError> {
        let mut batch = ChangelogBatch::new();
        self.store().flush_changelog(&mut batch)?;
        let out = batch.to_records();
        Ok(out)
    }
}

fn in_memory() -> Vec<Shaped> {
    vec![
        Shaped::Kv(Box::new(InMemoryKeyValueStore::new(
            StoreConfig::new("kv"),
            NoBadKey,
            NoNegatives,
        ))),
        Shaped::Window(Box::new(InMemoryWindowStore::new(
            StoreConfig::new("win"),
            segmented(),
            NoBadKey,
            NoNegatives,
        ))),
        Shaped::Session(Box::new(InMemorySessionStore::new(
            StoreConfig::new("ses"),
            segmented(),
            NoBadKey,
            NoNegatives,
        ))),
    ]
}

fn persistent(cfg: &PersistentConfig) -> Vec<Shaped> {
    let kv = PersistentKeyValueStore::open(cfg, StoreConfig::new("kv"), NoBadKey, NoNegatives);
    let window = PersistentWindowStore::open(
        cfg,
        StoreConfig::new("win"),
        segmented(),
        NoBadKey,
        NoNegatives,
    );
    let session = PersistentSessionStore::open(
        cfg,
        StoreConfig::new("ses"),
        segmented(),
        NoBadKey,
        NoNegatives,
    );
    vec![
        Shaped::Kv(Box::new(kv.expect("open"))),
        Shaped::Window(Box::new(window.expect("open"))),
        Shaped::Session(Box::new(session.expect("open"))),
    ]
}

#[test]
fn in_memory_flush_of_a_value_that_does_not_encode_names_store_and_key_and_loses_nothing() {
    for mut s in in_memory() {
        s.write("a", 1).unwrap();
        s.write("b", -1).unwrap();
        s.write("c", 3).unwrap();
        let name = s.store().name().to_string();
        let dirty = s.store().dirty_keys();
        let mut out = ChangelogBatch::new();
        out.push(b"earlier", None, 0);
        let err = s.store().flush_changelog(&mut out).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("store {name}: cannot encode the value of key \"b\": refused -1")
        );
        assert!(
            matches!(&err, StateError::EncodeValue { store, key, .. } if *store == name && key == "\"b\""),
            "{err:?}"
        );
        // All or nothing: no record of this flush is left, every key is still dirty.
        assert_eq!(out.len(), 1, "{name}");
        assert_eq!(s.store().dirty_keys(), dirty, "{name}");
        // Once the value encodes, the next flush writes every key of the epoch.
        s.write("b", 2).unwrap();
        let values: Vec<_> = s.flush().unwrap().into_iter().map(|r| r.value).collect();
        let want: Vec<_> = [1i64, 2, 3]
            .map(|v| Some(v.to_be_bytes().to_vec()))
            .to_vec();
        assert_eq!(values, want, "{name}");
        assert_eq!(s.store().dirty_keys(), 0, "{name}");
    }
}

#[test]
fn in_memory_flush_of_a_key_that_does_not_encode_names_its_place_in_the_flush() {
    for mut s in in_memory() {
        s.write("a", 1).unwrap();
        s.write("bad", 2).unwrap();
        let name = s.store().name().to_string();
        let err = s.flush().unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("store {name}: cannot encode key #2 of the barrier flush: refused key")
        );
    }
}

#[test]
fn persistent_write_that_does_not_encode_names_store_and_key_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = PersistentConfig::new(tmp.path(), "it-app");
    for mut s in persistent(&cfg) {
        s.write("a", 1).unwrap();
        let name = s.store().name().to_string();
        let err = s.write("b", -1).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("store {name}: cannot encode the value of key \"b\": refused -1")
        );
        let err = s.write("bad", 1).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("store {name}: cannot encode key passed to put: refused key")
        );
        // Neither failed write reached the store or its changelog.
        assert_eq!(s.store().approximate_num_entries(), 1, "{name}");
        let keys: Vec<_> = s.flush().unwrap().into_iter().map(|r| r.key[0]).collect();
        assert_eq!(keys, vec![b'a'], "{name}");
    }
}

/// A persistent store keeps an `i64` key in a sortable form (its sign bit flipped), but an
/// error names the key by its encoding, the bytes its serializer wrote, as the in-memory
/// store does: key 5 is `0000000000000005` on both engines, not `8000000000000005`.
#[test]
fn an_error_names_a_sortable_key_by_its_encoding_on_both_engines() {
    let want = "cannot encode the value of key 0000000000000005: refused -1";
    let tmp = tempfile::tempdir().unwrap();
    let cfg = PersistentConfig::new(tmp.path(), "it-app");
    let mut persistent = PersistentWindowStore::open(
        &cfg,
        StoreConfig::new("win"),
        segmented(),
        I64Codec,
        NoNegatives,
    )
    .expect("open");
    let err = persistent.put(5, 0, -1, 10).unwrap_err();
    assert!(err.to_string().ends_with(want), "{err}");
    let mut in_memory =
        InMemoryWindowStore::new(StoreConfig::new("win"), segmented(), I64Codec, NoNegatives);
    in_memory.put(5, 0, -1, 10).unwrap();
    let err = in_memory
        .flush_changelog(&mut ChangelogBatch::new())
        .unwrap_err();
    assert!(err.to_string().ends_with(want), "{err}");
}
