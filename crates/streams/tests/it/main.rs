//! Integration tests of stoatflow-streams through its public API.

mod hostile_bytes;
