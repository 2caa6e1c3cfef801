//! [`Windowing`]: how `windowed_by` picks the windowed stream for a window kind.
//!
//! Rust has no overloading, so `KGroupedStream::windowed_by` is generic over
//! [`Windowing`], whose associated types name the stream it returns:
//! [`TimeWindows`] gives a [`TimeWindowedKStream`] (as before),
//! [`SlidingWindows`] a [`SlidingWindowedKStream`], [`SessionWindows`] a
//! [`SessionWindowedKStream`]; on a cogrouped stream the same call gives the
//! cogrouped forms. Existing `windowed_by(TimeWindows::..)` calls compile
//! unchanged.
//!
//! The window definitions themselves are `crate::windows`.

use crate::dsl::cogroup::{
    CogroupValue, SessionWindowedCogroupedKStream, SlidingWindowedCogroupedKStream,
    TimeWindowedCogroupedKStream,
};
use crate::dsl::kstream::KStream;
use crate::dsl::windowed::{SessionWindowedKStream, SlidingWindowedKStream, TimeWindowedKStream};
use crate::windows::{SessionWindows, SlidingWindows, TimeWindows};

/// A window kind `windowed_by` accepts; its associated types are the
/// streams it returns for a grouped and for a cogrouped stream.
pub trait Windowing: Copy + std::fmt::Debug {
    /// The windowed stream of a grouped stream.
    type Stream<K, V>;
    /// The windowed stream of a cogrouped stream aggregating into `A`.
    type Cogrouped<K, A>;

    #[doc(hidden)]
    fn stream<K, V>(self, stream: KStream<K, V>) -> Self::Stream<K, V>
    where
        K: Ord + Clone + std::fmt::Debug + 'static,
        V: Clone + 'static;

    #[doc(hidden)]
    fn cogrouped<K, A>(self, stream: KStream<K, CogroupValue<K, A>>) -> Self::Cogrouped<K, A>
    where
        K: Ord + Clone + std::fmt::Debug + 'static,
        A: Clone + 'static;
}

impl Windowing for TimeWindows {
    type Stream<K, V> = TimeWindowedKStream<K, V>;
    type Cogrouped<K, A> = TimeWindowedCogroupedKStream<K, A>;

    fn stream<K, V>(self, stream: KStream<K, V>) -> TimeWindowedKStream<K, V>
    where
        K: Ord + Clone + std::fmt::Debug + 'static,
        V: Clone + 'static,
    {
        TimeWindowedKStream::new(stream, self)
    }

    fn cogrouped<K, A>(self, stream: KStream<K, CogroupValue<K, A>>) -> Self::Cogrouped<K, A>
    where
        K: Ord + Clone + std::fmt::Debug + 'static,
        A: Clone + 'static,
    {
        TimeWindowedCogroupedKStream {
            inner: self.stream(stream),
        }
    }
}

impl Windowing for SlidingWindows {
    type Stream<K, V> = SlidingWindowedKStream<K, V>;
    type Cogrouped<K, A> = SlidingWindowedCogroupedKStream<K, A>;

    fn stream<K, V>(self, stream: KStream<K, V>) -> SlidingWindowedKStream<K, V>
    where
        K: Ord + Clone + std::fmt::Debug + 'static,
        V: Clone + 'static,
    {
        SlidingWindowedKStream::new(stream, self)
    }

    fn cogrouped<K, A>(self, stream: KStream<K, CogroupValue<K, A>>) -> Self::Cogrouped<K, A>
    where
        K: Ord + Clone + std::fmt::Debug + 'static,
        A: Clone + 'static,
    {
        SlidingWindowedCogroupedKStream {
            inner: self.stream(stream),
        }
    }
}

impl Windowing for SessionWindows {
    type Stream<K, V> = SessionWindowedKStream<K, V>;
    type Cogrouped<K, A> = SessionWindowedCogroupedKStream<K, A>;

    fn stream<K, V>(self, stream: KStream<K, V>) -> SessionWindowedKStream<K, V>
    where
        K: Ord + Clone + std::fmt::Debug + 'static,
        V: Clone + 'static,
    {
        SessionWindowedKStream::new(stream, self)
    }

    fn cogrouped<K, A>(self, stream: KStream<K, CogroupValue<K, A>>) -> Self::Cogrouped<K, A>
    where
        K: Ord + Clone + std::fmt::Debug + 'static,
        A: Clone + 'static,
    {
        SessionWindowedCogroupedKStream {
            inner: self.stream(stream),
        }
    }
}
