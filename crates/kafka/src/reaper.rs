//! [`Reaped`]: a librdkafka client whose destruction runs off the caller's
//! thread.
//!
//! Destroying a librdkafka client joins its internal threads, which wake on
//! their own poll timers: a plain consumer took 100 ms to drop on the test
//! broker, paid by whoever dropped it (an engine start reads the stamp ring
//! with a consumer it then drops, before it can run). A `Reaped` client is
//! dropped on a short-lived thread of its own instead; if that thread
//! cannot be started it is dropped in place. Only for clients whose
//! destruction has no effect the caller waits for: a consumer that never
//! joined a group and never commits (a group member's leave is awaited,
//! not reaped). Knows nothing of what the client does.

use std::ops::Deref;

/// `T`, dropped on a thread of its own.
pub(crate) struct Reaped<T: Send + 'static>(Option<T>);

impl<T: Send + 'static> Reaped<T> {
    pub(crate) fn new(client: T) -> Self {
        Reaped(Some(client))
    }
}

impl<T: Send + 'static> Deref for Reaped<T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.0.as_ref().expect("taken only by drop")
    }
}

impl<T: Send + 'static> Drop for Reaped<T> {
    fn drop(&mut self) {
        if let Some(client) = self.0.take() {
            // On a failed spawn the closure, and the client with it, is
            // dropped here.
            let _ = std::thread::Builder::new()
                .name("kafka-reaper".into())
                .spawn(move || drop(client));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    struct Tells(mpsc::Sender<std::thread::ThreadId>);

    impl Drop for Tells {
        fn drop(&mut self) {
            let _ = self.0.send(std::thread::current().id());
        }
    }

    #[test]
    fn the_client_is_dropped_once_on_another_thread() {
        let (tx, rx) = mpsc::channel();
        drop(Reaped::new(Tells(tx)));
        let on = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("dropped");
        assert_ne!(on, std::thread::current().id());
        assert!(rx.recv().is_err(), "dropped once");
    }
}
