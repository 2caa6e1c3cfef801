//! [`EventTimeReader`]: how whoever orders records before a task (the
//! runtime's dispatcher) learns a serialized record's event time. The
//! contract lives here, beside the graph that stores one per source; the
//! source processor implements it.

/// Reads a serialized record's event time the way its source will assign it
/// (deserialize, then the strategy's timestamp assigner, else the record's
/// own timestamp), without processing it. The runtime's dispatcher needs the
/// event time before a task sees the record: ordered dispatch and the
/// watermark generators run on it. `Send + Sync`: it runs on the poll thread.
pub trait EventTimeReader: Send + Sync + std::fmt::Debug {
    /// The event time `record_timestamp`'s record will be given, with
    /// `partition_time` the largest event time its partition has produced.
    ///
    /// # Errors
    /// The record does not deserialize or its time is invalid: the message
    /// names the topic and what failed. The task will meet the same failure
    /// and route it through the deserialization handler.
    fn event_time(
        &self,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        record_timestamp: i64,
        partition_time: Option<stoatflow_time::EventTime>,
    ) -> Result<stoatflow_time::EventTime, String>;
}
