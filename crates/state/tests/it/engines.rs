//! The engines under test, behind one factory, and changelog helpers.

use stoatflow_state::{
    ChangelogBatch, ChangelogEntry, ChangelogOffset, ChangelogPartition, ChangelogRecord, I64Codec,
    InMemoryKeyValueStore, InMemorySessionStore, InMemoryWindowStore, KeyValueStore,
    PersistentConfig, PersistentKeyValueStore, PersistentSessionStore, PersistentWindowStore,
    SegmentedConfig, SessionStore, StateStore, StoreConfig, StoreDirectory, StringCodec,
    WindowStore, restore,
};

pub type Kv = Box<dyn KeyValueStore<String, i64>>;
pub type Win = Box<dyn WindowStore<String, i64>>;
pub type Ses = Box<dyn SessionStore<String, i64>>;

/// Which engine a test runs on.
#[derive(Debug, Clone, Copy)]
pub enum Engine {
    InMemory,
    Persistent,
}

pub const ENGINES: [Engine; 2] = [Engine::InMemory, Engine::Persistent];

pub fn segmented() -> SegmentedConfig {
    SegmentedConfig::new(40).with_segment_interval(20)
}

/// Creates fresh stores; holds whatever directories they need until dropped.
#[derive(Debug)]
pub struct Factory {
    engine: Engine,
    tmp: tempfile::TempDir,
    created: usize,
}

impl Factory {
    pub fn new(engine: Engine) -> Self {
        Self {
            engine,
            tmp: tempfile::tempdir().expect("tempdir"),
            created: 0,
        }
    }

    /// A fresh state directory per store, so a rebuilt store never sees the original's files.
    fn persistent(&mut self) -> PersistentConfig {
        self.created += 1;
        PersistentConfig::new(self.tmp.path().join(self.created.to_string()), "it-app")
    }

    pub fn kv(&mut self, name: &str) -> Kv {
        match self.engine {
            Engine::InMemory => Box::new(InMemoryKeyValueStore::new(
                StoreConfig::new(name),
                StringCodec,
                I64Codec,
            )),
            Engine::Persistent => Box::new(
                PersistentKeyValueStore::open(
                    &self.persistent(),
                    StoreConfig::new(name),
                    StringCodec,
                    I64Codec,
                )
                .expect("open"),
            ),
        }
    }

    pub fn window(&mut self, name: &str) -> Win {
        match self.engine {
            Engine::InMemory => Box::new(InMemoryWindowStore::new(
                StoreConfig::new(name),
                segmented(),
                StringCodec,
                I64Codec,
            )),
            Engine::Persistent => Box::new(
                PersistentWindowStore::open(
                    &self.persistent(),
                    StoreConfig::new(name),
                    segmented(),
                    StringCodec,
                    I64Codec,
                )
                .expect("open"),
            ),
        }
    }

    pub fn session(&mut self, name: &str) -> Ses {
        match self.engine {
            Engine::InMemory => Box::new(InMemorySessionStore::new(
                StoreConfig::new(name),
                segmented(),
                StringCodec,
                I64Codec,
            )),
            Engine::Persistent => Box::new(
                PersistentSessionStore::open(
                    &self.persistent(),
                    StoreConfig::new(name),
                    segmented(),
                    StringCodec,
                    I64Codec,
                )
                .expect("open"),
            ),
        }
    }
}

/// A changelog partition as a broker would hold it: committed entries, with the offset at
/// which each epoch's transaction committed.
#[derive(Debug, Default, Clone)]
pub struct Changelog {
    pub entries: Vec<ChangelogEntry>,
    /// `commits[i]` = number of entries once epoch `i` committed.
    pub commits: Vec<usize>,
}

impl Changelog {
    pub fn append(&mut self, records: Vec<ChangelogRecord>) {
        for r in records {
            let offset = ChangelogOffset(self.entries.len() as u64);
            self.entries.push(ChangelogEntry::from_record(
                r,
                ChangelogPartition(0),
                offset,
            ));
        }
    }

    /// Flushes `store` and commits the epoch.
    pub fn commit(&mut self, store: &mut dyn StateStore) {
        let mut batch = ChangelogBatch::new();
        store.flush_changelog(&mut batch).expect("flush");
        self.append(batch.to_records());
        self.commits.push(self.entries.len());
    }

    /// A clean close of `store` (already dropped): its checkpoint says everything in this
    /// changelog is in its files.
    pub fn checkpoint_clean_close(&self, cfg: &PersistentConfig, store: &str) {
        StoreDirectory::open(cfg, store)
            .expect("store directory")
            .write_checkpoint(&[(
                ChangelogPartition(0),
                ChangelogOffset(self.entries.len() as u64),
            )])
            .expect("checkpoint");
    }

    /// What a read-committed consumer sees if the writer crashed after `prefix` entries:
    /// only the epochs that committed within the prefix. Returns (entries, epochs).
    pub fn committed_prefix(&self, prefix: usize) -> (&[ChangelogEntry], usize) {
        let epochs = self.commits.iter().take_while(|&&c| c <= prefix).count();
        let end = if epochs == 0 {
            0
        } else {
            self.commits[epochs - 1]
        };
        (&self.entries[..end], epochs)
    }
}

pub fn restore_from(store: &mut dyn StateStore, entries: &[ChangelogEntry]) {
    let mut last = None;
    restore(
        store,
        entries.iter().cloned(),
        entries.len() as u64,
        &mut |p| last = Some(p),
    )
    .expect("restore");
    let last = last.expect("progress reported at the end");
    assert_eq!(last.restored, entries.len() as u64);
    assert_eq!(last.total, entries.len() as u64);
}

pub fn kv_state(s: &Kv) -> Vec<(String, i64)> {
    let mut v = s.all().expect("all");
    v.sort();
    v
}

pub fn window_state(s: &Win) -> Vec<(i64, String, i64)> {
    let mut v = s.fetch_all(i64::MIN, i64::MAX).expect("fetch_all");
    v.sort();
    v
}

pub fn session_state(s: &Ses) -> Vec<(i64, i64, String, i64)> {
    let mut v: Vec<_> = s
        .fetch_all_by_end(i64::MIN, i64::MAX)
        .expect("fetch_all_by_end")
        .into_iter()
        .map(|(w, k, v)| (w.start, w.end, k, v))
        .collect();
    v.sort();
    v
}
