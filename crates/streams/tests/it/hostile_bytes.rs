//! Arbitrary bytes against the serdes that read bytes from outside: JSON over user types
//! (`Serdes::json()`), the Kafka Streams windowed key layouts and the primitives. Each
//! returns a value or an error naming the topic, never a panic; a decoded value serializes
//! back to bytes that decode again (not necessarily to an equal value: serde_json's default
//! float parsing can move the last bit). Case counts rise with `STOATFLOW_HEAVY_TESTS`.

use std::collections::BTreeMap;
use std::fmt::Debug;

use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use stoatflow_streams::{Serde, Serdes};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Bid {
    auction: u64,
    bidder: String,
    price: f64,
    tags: Vec<String>,
    extra: Option<BTreeMap<String, i64>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Event {
    Bid(Bid),
    Close { auction: u64 },
    Tick,
}

fn cases() -> ProptestConfig {
    let heavy = std::env::var_os("STOATFLOW_HEAVY_TESTS").is_some();
    ProptestConfig::with_cases(if heavy { 20_000 } else { 512 })
}

/// Deserializes `bytes`; an error names the topic, a value survives a round trip.
fn decodes_or_refuses<T: Debug>(serde: &dyn Serde<T>, bytes: &[u8]) -> Result<(), TestCaseError> {
    match serde.deserialize("bids", bytes) {
        Ok(v) => {
            let mut out = Vec::new();
            serde.serialize("bids", &v, &mut out).unwrap();
            let again = serde.deserialize("bids", &out);
            prop_assert!(again.is_ok(), "{:?}: {:?} -> {:?}", serde, v, again);
        }
        Err(e) => prop_assert!(e.to_string().contains("bids"), "{}", e),
    }
    Ok(())
}

/// Bytes that look like JSON often enough to reach deep into the parser.
fn jsonish() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..64),
        "[\\[\\]{}\":,0-9a-z.eE+\\- \\\\]{0,80}".prop_map(String::into_bytes),
        (0usize..300).prop_map(|depth| {
            let mut s = "[".repeat(depth);
            s.push_str(&"]".repeat(depth / 2));
            s.into_bytes()
        }),
        any::<(u64, String, f64)>().prop_map(|(auction, bidder, price)| {
            format!(r#"{{"auction":{auction},"bidder":{bidder:?},"price":{price},"tags":[]}}"#)
                .into_bytes()
        }),
    ]
}

proptest! {
    #![proptest_config(cases())]

    #[test]
    fn json_deserializes_any_bytes_or_refuses(b in jsonish()) {
        decodes_or_refuses(&Serdes::json::<Bid>(), &b)?;
        decodes_or_refuses(&Serdes::json::<Event>(), &b)?;
        decodes_or_refuses(&Serdes::json::<Vec<Option<i64>>>(), &b)?;
        decodes_or_refuses(&Serdes::json::<BTreeMap<String, f64>>(), &b)?;
        decodes_or_refuses(&Serdes::json::<String>(), &b)?;
        decodes_or_refuses(&Serdes::json::<serde_json::Value>(), &b)?;
    }

    #[test]
    fn windowed_keys_and_primitives_deserialize_any_bytes_or_refuse(
        b in prop::collection::vec(any::<u8>(), 0..40),
    ) {
        decodes_or_refuses(&Serdes::time_windowed(Serdes::string(), 1000), &b)?;
        decodes_or_refuses(&Serdes::time_windowed(Serdes::i64(), i64::MAX), &b)?;
        decodes_or_refuses(&Serdes::session_windowed(Serdes::string()), &b)?;
        decodes_or_refuses(&Serdes::session_windowed(Serdes::json::<Vec<u8>>()), &b)?;
        decodes_or_refuses(&Serdes::string(), &b)?;
        decodes_or_refuses(&Serdes::i32(), &b)?;
        decodes_or_refuses(&Serdes::i64(), &b)?;
        decodes_or_refuses(&Serdes::f64(), &b)?;
        decodes_or_refuses(&Serdes::bytes(), &b)?;
        decodes_or_refuses(&Serdes::nullable(Serdes::i64()), &b)?;
    }
}
