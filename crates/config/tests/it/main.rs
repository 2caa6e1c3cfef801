//! Integration tests of the configuration loader.

mod bad_config;
mod every_key;
mod startup_warning;
