//! Integration tests of stoatflow-server.

mod http;
mod watermarks_endpoint;
