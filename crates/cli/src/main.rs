//! `stoatflow`: the command line.
//!
//! `stoatflow quickstart` runs the README's first example. Thin: every rule it
//! shows lives in the library crates.

mod quickstart;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("quickstart") => quickstart::run(&args[1..]),
        Some("--help" | "-h" | "help") | None => {
            println!(
                "usage: stoatflow <command>\n\ncommands:\n  quickstart    run the orders example and print its results"
            );
            Ok(())
        }
        Some(other) => anyhow::bail!("unknown command '{other}'; try `stoatflow --help`"),
    }
}
