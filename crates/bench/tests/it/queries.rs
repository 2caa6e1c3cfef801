//! Each Nexmark query on a small generated input, run through the
//! benchmark's own entry point (`run_nexmark`, the figures' barrier cadence
//! and changelogs on), against a straightforward reference computation over
//! the same events.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stoatflow_bench::nexmark::{Bid, Event, Generator, GeneratorConfig};
use stoatflow_bench::queries::{self, DOLLAR_TO_EURO, HotItems};
use stoatflow_bench::run::{RunOptions, run_nexmark};
use stoatflow_streams::{KStream, StreamsBuilder};

/// The figures' generator (10,000 events per second of event time) with
/// out-of-order groups of `out_of_order_group_size` events.
fn config(out_of_order_group_size: i64) -> GeneratorConfig {
    GeneratorConfig {
        out_of_order_group_size,
        ..GeneratorConfig::default()
    }
}

fn generate(c: &GeneratorConfig, n: usize) -> Vec<Event> {
    Generator::new(c.clone()).take(n).collect()
}

fn bids(events: &[Event]) -> Vec<Bid> {
    events.iter().cloned().filter_map(Event::into_bid).collect()
}

/// The benchmark's own entry point with a collecting sink: `n` events of
/// `c`, a barrier every 10,000 events (1 s of event time) at the watermark
/// the out-of-orderness bound behind the largest time seen, changelogs on —
/// the figures' cadence and settings — then the end of input.
fn run<K, V>(
    c: &GeneratorConfig,
    n: usize,
    build: impl FnOnce(&mut StreamsBuilder, Duration) -> KStream<K, V>,
) -> Vec<(K, V)>
where
    K: Clone + Send + 'static,
    V: Clone + Send + 'static,
{
    let out = Arc::new(Mutex::new(Vec::new()));
    let sink = out.clone();
    let opts = RunOptions {
        events: n as u64,
        generator: c.clone(),
        ..RunOptions::default()
    };
    assert_eq!(opts.frontier_every, 10_000, "the figures' cadence");
    assert!(opts.changelog, "the figures' headline setting");
    run_nexmark(
        "test",
        build,
        move |k: &K, v: &V| sink.lock().expect("sink").push((k.clone(), v.clone())),
        &opts,
    )
    .expect("run");
    // The pipeline, and the sink with it, is gone once the run returns.
    Arc::try_unwrap(out)
        .ok()
        .expect("the sink is dropped")
        .into_inner()
        .expect("sink")
}

#[test]
fn q0_passes_every_bid_through() {
    let c = config(1);
    let events = generate(&c, 25_000);
    let out: Vec<Bid> = run(&c, events.len(), queries::q0)
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    assert_eq!(out, bids(&events));
    assert_eq!(out.len(), 23_000);
}

#[test]
fn q1_converts_prices_to_euros() {
    let c = config(1);
    let events = generate(&c, 25_000);
    let out: Vec<(i64, i64)> = run(&c, events.len(), queries::q1)
        .into_iter()
        .map(|(_, b)| (b.auction, b.price))
        .collect();
    let expected: Vec<(i64, i64)> = bids(&events)
        .iter()
        .map(|b| (b.auction, (b.price as f64 * DOLLAR_TO_EURO) as i64))
        .collect();
    assert_eq!(out, expected);
}

#[test]
fn q2_keeps_bids_on_auctions_divisible_by_123() {
    let c = config(1);
    let events = generate(&c, 50_000);
    let out: Vec<(i64, i64)> = run(&c, events.len(), queries::q2)
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    let expected: Vec<(i64, i64)> = bids(&events)
        .iter()
        .filter(|b| b.auction % 123 == 0)
        .map(|b| (b.auction, b.price))
        .collect();
    assert!(!expected.is_empty(), "the input has matching bids");
    assert_eq!(out, expected);
}

/// Hot items by brute force: every 2 s window start of a 10 s window
/// containing the bid, count per auction, keep the maximum and its auctions.
fn q5_reference(bids: &[Bid]) -> BTreeMap<i64, (i64, Vec<i64>)> {
    let mut counts: HashMap<(i64, i64), i64> = HashMap::new();
    for b in bids {
        let mut start = b.date_time - b.date_time.rem_euclid(2_000);
        while start > b.date_time - 10_000 {
            if start >= 0 {
                *counts.entry((start, b.auction)).or_default() += 1;
            }
            start -= 2_000;
        }
    }
    let mut hot: BTreeMap<i64, (i64, Vec<i64>)> = BTreeMap::new();
    for ((start, auction), n) in counts {
        let e = hot.entry(start).or_insert((0, Vec::new()));
        if n > e.0 {
            *e = (n, vec![auction]);
        } else if n == e.0 {
            e.1.push(auction);
        }
    }
    for v in hot.values_mut() {
        v.1.sort_unstable();
    }
    hot
}

fn q5_final(out: Vec<(i64, HotItems)>) -> BTreeMap<i64, (i64, Vec<i64>)> {
    let mut last = BTreeMap::new();
    for (start, hot) in out {
        let mut auctions = hot.auctions;
        auctions.sort_unstable();
        last.insert(start, (hot.count, auctions));
    }
    last
}

#[test]
fn q5_hot_items_match_a_brute_force_count() {
    let c = config(1);
    let events = generate(&c, 150_000);
    let got = q5_final(run(&c, events.len(), queries::q5));
    let expected = q5_reference(&bids(&events));
    assert!(expected.len() >= 7, "15 s of input spans many windows");
    assert_eq!(got, expected);
}

#[test]
fn q5_out_of_order_input_gives_the_same_hot_items() {
    let c = config(200);
    let events = generate(&c, 150_000);
    assert!(
        events
            .windows(2)
            .any(|w| w[1].date_time() < w[0].date_time()),
        "the input is out of order"
    );
    let got = q5_final(run(&c, events.len(), queries::q5));
    assert_eq!(got, q5_reference(&bids(&events)));
}

#[test]
fn q7_finds_the_highest_bids_of_each_window() {
    let c = config(1);
    let events = generate(&c, 250_000);
    let mut got: Vec<(i64, i64, i64)> = run(&c, events.len(), queries::q7)
        .into_iter()
        .map(|(_, b)| (b.date_time, b.auction, b.price))
        .collect();
    got.sort_unstable();
    let all = bids(&events);
    let mut max: BTreeMap<i64, i64> = BTreeMap::new();
    for b in &all {
        let m = max
            .entry(b.date_time.div_euclid(10_000))
            .or_insert(i64::MIN);
        *m = (*m).max(b.price);
    }
    let mut expected: Vec<(i64, i64, i64)> = all
        .iter()
        .filter(|b| b.price == max[&b.date_time.div_euclid(10_000)])
        .map(|b| (b.date_time, b.auction, b.price))
        .collect();
    expected.sort_unstable();
    assert!(expected.len() >= 3, "25 s of input spans several windows");
    assert_eq!(got, expected);
}

#[test]
fn q8_finds_new_persons_who_sold_in_their_window() {
    let c = config(1);
    let events = generate(&c, 150_000);
    let mut got: Vec<(i64, i64, String)> = run(&c, events.len(), queries::q8)
        .into_iter()
        .map(|(w, name)| (w.window.start, w.key, name))
        .collect();
    got.sort();
    let window = |t: i64| t - t.rem_euclid(10_000);
    let sellers: std::collections::HashSet<(i64, i64)> = events
        .iter()
        .cloned()
        .filter_map(Event::into_auction)
        .map(|a| (window(a.date_time), a.seller))
        .collect();
    let mut expected: Vec<(i64, i64, String)> = events
        .iter()
        .cloned()
        .filter_map(Event::into_person)
        .filter(|p| sellers.contains(&(window(p.date_time), p.id)))
        .map(|p| (window(p.date_time), p.id, p.name.to_string()))
        .collect();
    expected.sort();
    assert!(!expected.is_empty(), "some new persons sell at once");
    assert_eq!(got, expected);
}
