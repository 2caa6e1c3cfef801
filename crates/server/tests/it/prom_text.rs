//! A strict parser of the Prometheus text exposition format (0.0.4), for
//! reading `/metrics` back: every sample must belong to the family its
//! `# TYPE` line declared, names and labels must be well formed, values
//! must be numbers, histograms must be cumulative and end in `+Inf`.

use std::collections::BTreeMap;

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// One metric family: its `# TYPE`, `# HELP` and samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    pub kind: String,
    pub help: Option<String>,
    pub samples: Vec<Sample>,
}

fn is_name(s: &str, colon: bool) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || (colon && c == ':'))
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':'))
}

fn value(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => s.parse().map_err(|_| format!("{s:?} is not a number")),
    }
}

fn labels(s: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    let mut rest = s;
    while !rest.is_empty() {
        let (name, after) = rest
            .split_once("=\"")
            .ok_or_else(|| format!("label without =\" in {s:?}"))?;
        if !is_name(name, false) {
            return Err(format!("bad label name {name:?}"));
        }
        let mut v = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next() {
                None => return Err(format!("unterminated label value in {s:?}")),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => v.push('\\'),
                    Some((_, '"')) => v.push('"'),
                    Some((_, 'n')) => v.push('\n'),
                    other => return Err(format!("bad escape {other:?} in {s:?}")),
                },
                Some((_, c)) => v.push(c),
            }
        };
        if out.insert(name.to_owned(), v).is_some() {
            return Err(format!("label {name} twice in {s:?}"));
        }
        rest = &after[end + 1..];
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
    Ok(out)
}

/// Which family a sample name belongs to, given the family's type.
fn belongs(sample: &str, family: &str, kind: &str) -> bool {
    match kind {
        "histogram" => [
            format!("{family}_bucket"),
            format!("{family}_sum"),
            format!("{family}_count"),
        ]
        .iter()
        .any(|n| n == sample),
        "summary" => {
            sample == family
                || sample == format!("{family}_sum")
                || sample == format!("{family}_count")
        }
        _ => sample == family,
    }
}

/// Parses `text`, or says which line is wrong and why.
pub fn parse(text: &str) -> Result<BTreeMap<String, Family>, String> {
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    let mut current: Option<String> = None;
    for (n, line) in text.lines().enumerate() {
        let at = |why: String| format!("line {}: {why}: {line:?}", n + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            if !is_name(name, true) {
                return Err(at("bad metric name".into()));
            }
            families.entry(name.to_owned()).or_insert(Family {
                kind: String::new(),
                help: None,
                samples: Vec::new(),
            });
            let f = families.get_mut(name).expect("inserted");
            if f.help.replace(help.to_owned()).is_some() {
                return Err(at("second HELP".into()));
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest
                .split_once(' ')
                .ok_or_else(|| at("TYPE without a type".into()))?;
            if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                return Err(at(format!("unknown type {kind}")));
            }
            let f = families.entry(name.to_owned()).or_insert(Family {
                kind: String::new(),
                help: None,
                samples: Vec::new(),
            });
            if !f.kind.is_empty() || !f.samples.is_empty() {
                return Err(at("TYPE after the family's samples or twice".into()));
            }
            f.kind = kind.to_owned();
            current = Some(name.to_owned());
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let (name_labels, rest) = match line.find('{') {
            Some(open) => {
                let close = line.rfind('}').ok_or_else(|| at("unclosed {".into()))?;
                (
                    (&line[..open], labels(&line[open + 1..close]).map_err(at)?),
                    line[close + 1..].trim_start(),
                )
            }
            None => {
                let (name, rest) = line
                    .split_once(' ')
                    .ok_or_else(|| at("sample without a value".into()))?;
                ((name, BTreeMap::new()), rest)
            }
        };
        let (name, labels) = name_labels;
        if !is_name(name, true) {
            return Err(at("bad metric name".into()));
        }
        let mut fields = rest.split(' ');
        let v = value(fields.next().unwrap_or_default()).map_err(at)?;
        if let Some(ts) = fields.next() {
            ts.parse::<i64>().map_err(|_| at("bad timestamp".into()))?;
        }
        if fields.next().is_some() {
            return Err(at("trailing fields".into()));
        }
        let family = current
            .as_ref()
            .filter(|f| belongs(name, f, &families[*f].kind))
            .ok_or_else(|| at("sample outside its family's TYPE block".into()))?
            .clone();
        families
            .get_mut(&family)
            .expect("current family exists")
            .samples
            .push(Sample {
                name: name.to_owned(),
                labels,
                value: v,
            });
    }
    for (name, f) in &families {
        if f.kind.is_empty() {
            return Err(format!("{name}: HELP without TYPE"));
        }
        if f.kind == "histogram" {
            check_histogram(name, f)?;
        }
    }
    Ok(families)
}

fn check_histogram(name: &str, f: &Family) -> Result<(), String> {
    let buckets: Vec<&Sample> = f
        .samples
        .iter()
        .filter(|s| s.name.ends_with("_bucket"))
        .collect();
    let Some(last) = buckets.last() else {
        return Ok(());
    };
    let mut previous = (f64::NEG_INFINITY, 0.0);
    for b in &buckets {
        let le = value(
            b.labels
                .get("le")
                .ok_or(format!("{name}: bucket without le"))?,
        )?;
        if le <= previous.0 || b.value < previous.1 {
            return Err(format!("{name}: buckets not cumulative at le={le}"));
        }
        previous = (le, b.value);
    }
    let count = f
        .samples
        .iter()
        .find(|s| s.name.ends_with("_count"))
        .ok_or(format!("{name}: no _count"))?;
    if last.labels["le"] != "+Inf" || last.value != count.value {
        return Err(format!("{name}: the +Inf bucket must equal _count"));
    }
    Ok(())
}

#[test]
fn the_parser_refuses_what_is_not_the_format() {
    let good = "# HELP a_total A.\n# TYPE a_total counter\na_total{reason=\"x\\\"y\"} 3\n";
    let f = parse(good).unwrap();
    assert_eq!(f["a_total"].samples[0].labels["reason"], "x\"y");
    for bad in [
        "a 1\n",
        "# TYPE a gauge\nb 1\n",
        "# TYPE a gauge\na{x=\"1} 1\n",
        "# TYPE a gauge\na one\n",
        "# TYPE a wibble\n",
        "# TYPE a gauge\n# TYPE a gauge\n",
        "# TYPE 1a gauge\n1a 1\n",
        "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_count 1\nh_sum 0\n",
        "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_count 3\nh_sum 0\n",
    ] {
        assert!(parse(bad).is_err(), "accepted {bad:?}");
    }
}
