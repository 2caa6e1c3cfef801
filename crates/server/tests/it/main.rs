//! Integration tests of stoatflow-server.

mod watermarks_endpoint;
