//! The topics `stoatflow run` needs for an example: which to create, and
//! with how many partitions, checked against those already there before
//! any is created.
//!
//! The rule: an existing topic keeps its partition count. `--partitions`,
//! when given, must agree with every existing topic of the example (an
//! error names the topic and both counts); when left out, missing topics
//! take the count of the existing inputs (which must agree with each
//! other: one sub-topology reads them all), else 1.
//!
//! Owns only that rule; the log's shapes are the facade's `App`'s.

use anyhow::Context;
use stoatflow::App;
use stoatflow::log::TopicSpec;

use crate::examples::Example;

/// The topics of `example` that are missing, with the partition count
/// they are to be created with. Creates nothing.
///
/// # Errors
/// A topic whose partition count disagrees with `--partitions` or with
/// another input, naming the topic and both counts; the log's error.
pub fn missing(
    app: &App,
    example: Example,
    partitions: Option<u32>,
) -> anyhow::Result<Vec<TopicSpec>> {
    let mut existing: Vec<(&str, Option<u32>)> = Vec::new();
    for topic in example.inputs().iter().chain([&example.output()]) {
        let shape = app
            .describe_topic(topic)
            .with_context(|| format!("topic {topic}"))?;
        existing.push((topic, shape.map(|s| s.partitions)));
    }
    if let Some(asked) = partitions {
        anyhow::ensure!(asked > 0, "--partitions must be at least 1");
        for (topic, n) in &existing {
            if let Some(n) = *n
                && n != asked
            {
                anyhow::bail!(
                    "topic {topic} has {n} partition(s), but --partitions asks for {asked}; \
                     leave --partitions out to run on the topics as they are"
                );
            }
        }
    }
    let inputs = &existing[..example.inputs().len()];
    let mut first: Option<(&str, u32)> = None;
    for (topic, n) in inputs {
        let Some(n) = *n else { continue };
        match first {
            Some((other, m)) if m != n => anyhow::bail!(
                "input topics {other} ({m} partition(s)) and {topic} ({n} partition(s)) differ; \
                 example {} reads them together, so they need one partition count",
                example.name()
            ),
            Some(_) => {}
            None => first = Some((topic, n)),
        }
    }
    let count = partitions.or(first.map(|(_, n)| n)).unwrap_or(1);
    Ok(existing
        .into_iter()
        .filter(|(_, n)| n.is_none())
        .map(|(topic, _)| TopicSpec::new(topic, count))
        .collect())
}
