//! Integration tests of the configuration loader.

mod bad_config;
mod effective;
mod env_vars;
mod every_key;
mod example_file;
mod fuzz;
mod kafka_streams_names;
mod startup_warning;
mod strict_text;
