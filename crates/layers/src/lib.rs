//! The repository's own check of its layering.
//!
//! Every folder of a crate's `src/` (the root included) is a room whose units are its
//! direct children: each file (the folder's glue, `mod.rs` / `lib.rs` / `main.rs`, is left
//! out) and each sub-folder. A unit depends on another when code anywhere inside it names
//! a module inside the other through a `crate::`, `super::` or `self::` path; a name the
//! glue re-exports stands for the module it comes from. A loop is a set of two or more
//! units of one room that reach each other. Layers mean no loops: each room's units can be
//! read bottom-up.
//!
//! Unit-test modules (`#[cfg(test)] mod …`) are not counted: a test may reach up. A room
//! whose units are one vocabulary that name each other by design (a DSL's stream, table
//! and grouped types) says so in its glue's doc with the words "one vocabulary" and why;
//! its loop is then reported as allowed.
//!
//! This crate owns the reading of source text into module references ([`paths`]), the
//! crate's module tree ([`tree`]) and the loop search ([`rooms`]). It knows nothing of the
//! crates it checks; `tests/repository.rs` runs it over every crate of the workspace.

pub mod paths;
pub mod rooms;
pub mod tree;

pub use rooms::{Loop, RoomReport, check_crate};
