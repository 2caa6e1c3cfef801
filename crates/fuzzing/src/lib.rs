//! The fuzz harness of stoatflow's decoder tests, on the stable toolchain.
//!
//! Every surface that parses bytes from outside (log frames and batches, the
//! transaction log, offset metadata, store codecs and files, the YAML
//! configuration, HTTP request heads) has a fuzz target: an ordinary `#[test]`
//! that calls [`fuzz`] with seeds built by the real encoders. [`fuzz`] feeds
//! the target arbitrary bytes and mutated seeds ([`inputs`]: flipped bits,
//! cuts, splices, dictionary tokens, and `u32::MAX`-like values written over
//! what may be a length or count field), shrinks a failure to a small input,
//! and runs in a child process whose address space is bounded ([`bounded`]),
//! so that a decoder allocating what a length field claims aborts the test
//! rather than passing on an overcommitting machine.
//!
//! Three levels: a few thousand executions per target in every `cargo test`;
//! [`Tier::heavy`] executions under `STOATFLOW_HEAVY_TESTS` (what CI runs, so
//! sized to keep a CI run within its time); and any number for a long run
//! asked for by hand with `STOATFLOW_FUZZ_EXECUTIONS=<n>` (every target, a
//! million each say), which overrides both.
//!
//! Owns the mutation, the tiers and the bounded run. Knows nothing of any
//! decoder; the targets live beside the code they fuzz.

mod bounded;
mod mutate;

pub use bounded::{ADDRESS_SPACE_LIMIT, bounded};
pub use mutate::{Mutation, apply, inputs};

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// Whether the heavy tier runs (`STOATFLOW_HEAVY_TESTS` set).
#[must_use]
pub fn heavy() -> bool {
    std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some()
}

/// The variable that asks every target for a number of executions (a long run).
pub const EXECUTIONS_VAR: &str = "STOATFLOW_FUZZ_EXECUTIONS";

/// The executions a long run asks for in [`EXECUTIONS_VAR`], if it is set.
///
/// # Panics
/// When the variable is set to anything but a positive integer: a long run
/// that silently ran the default would be mistaken for one that ran.
#[must_use]
pub fn asked_executions() -> Option<u32> {
    let text = std::env::var(EXECUTIONS_VAR).ok()?;
    Some(parse_executions(&text).unwrap_or_else(|e| panic!("{e}")))
}

/// The executions [`EXECUTIONS_VAR`]'s `text` asks for, or an error naming it.
fn parse_executions(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "{EXECUTIONS_VAR}={text:?}: expected a positive number of executions"
        )),
    }
}

/// How many inputs a target is fed in each tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tier {
    /// In every `cargo test`: seconds at most.
    pub short: u32,
    /// Under `STOATFLOW_HEAVY_TESTS`.
    pub heavy: u32,
}

impl Tier {
    /// The tier of a pure decoder: 4,000 inputs, 100,000 in the heavy tier
    /// (seconds a target on an idle 2-core machine).
    pub const DECODER: Tier = Tier {
        short: 4_000,
        heavy: 100_000,
    };

    /// The executions that run now: [`asked_executions`] if a long run asks,
    /// else this tier's heavy or short count.
    #[must_use]
    pub fn executions(self) -> u32 {
        asked_executions().unwrap_or(if heavy() { self.heavy } else { self.short })
    }
}

/// Runs the fuzz target `module::name` (`module_path!()` of the test and the
/// test function's name): `check` on [`Tier::executions`] values of
/// `strategy`, in a child process with a bounded address space. A failing
/// value is shrunk and the test fails naming it.
///
/// # Panics
/// When `check` fails or panics on some input, or the child process dies
/// (an allocation past [`ADDRESS_SPACE_LIMIT`] aborts it).
pub fn fuzz<S: Strategy>(
    module: &str,
    name: &str,
    tier: Tier,
    strategy: S,
    check: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    bounded(module, name, || {
        let executions = tier.executions();
        let mut runner = TestRunner::new(Config {
            cases: executions,
            failure_persistence: None,
            ..Config::default()
        });
        let started = std::time::Instant::now();
        if let Err(e) = runner.run(&strategy, check) {
            panic!("fuzz target {name}: {e}");
        }
        eprintln!(
            "fuzz target {name}: {executions} executions in {:.1?}",
            started.elapsed()
        );
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_run_asks_for_a_positive_count_and_anything_else_is_refused_by_name() {
        assert_eq!(parse_executions("1000000"), Ok(1_000_000));
        assert_eq!(parse_executions(" 25 "), Ok(25));
        for bad in ["", "0", "-3", "lots", "1e6"] {
            let e = parse_executions(bad).unwrap_err();
            assert!(e.contains(EXECUTIONS_VAR) && e.contains(bad), "{e}");
        }
    }
}
