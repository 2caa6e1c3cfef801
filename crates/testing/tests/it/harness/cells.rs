//! Table cells: how a scenario table writes a key or value (text or a
//! number), how a typed topic turns a cell into its key or value type, and
//! how a record read back is rendered as text for comparison.
//!
//! Knows nothing of the driver or of steps.

use stoatflow_streams::{Serde, Serdes};

/// A key or value as a scenario table writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    /// `"A0"`.
    Text(String),
    /// `0`, `1_234`.
    Int(i64),
    /// A null value (a delete, on a nullable topic).
    Null,
}

impl Cell {
    /// The cell as output is rendered: text as is, a number in decimal.
    pub fn render(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Int(n) => n.to_string(),
            Cell::Null => "null".to_owned(),
        }
    }

    fn int(&self) -> i64 {
        match self {
            Cell::Int(n) => *n,
            Cell::Text(s) => panic!("the cell {s:?} is text, the topic wants a number"),
            Cell::Null => panic!("a null cell, the topic wants a number"),
        }
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Self {
        Cell::Text(s.to_owned())
    }
}

impl From<&&str> for Cell {
    fn from(s: &&str) -> Self {
        Cell::Text((*s).to_owned())
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Self {
        Cell::Text(s)
    }
}

impl From<&String> for Cell {
    fn from(s: &String) -> Self {
        Cell::Text(s.clone())
    }
}

impl From<i32> for Cell {
    fn from(n: i32) -> Self {
        Cell::Int(n.into())
    }
}

impl From<i64> for Cell {
    fn from(n: i64) -> Self {
        Cell::Int(n)
    }
}

/// A key or value type a scenario topic carries: its serde, how a cell
/// becomes one, and how one is rendered (`None`: a null).
pub trait Data: Sized + 'static {
    /// The serde the test topics use for this type.
    fn serde() -> impl Serde<Self> + 'static;
    /// The value a table cell stands for.
    ///
    /// # Panics
    /// If the cell is not written the way this type is (text for a number).
    fn from_cell(cell: &Cell) -> Self;
    /// The text a table compares against; `None` for a null.
    fn render(&self) -> Option<String>;
}

impl Data for String {
    fn serde() -> impl Serde<Self> + 'static {
        Serdes::string()
    }
    fn from_cell(cell: &Cell) -> Self {
        match cell {
            Cell::Text(s) => s.clone(),
            Cell::Int(n) => panic!("the cell {n} is a number, the topic wants text"),
            Cell::Null => panic!("a null cell, the topic wants non-null text"),
        }
    }
    fn render(&self) -> Option<String> {
        Some(self.clone())
    }
}

/// A nullable string: written as text, read back as `None` for a tombstone.
impl Data for Option<String> {
    fn serde() -> impl Serde<Self> + 'static {
        Serdes::nullable(Serdes::string())
    }
    fn from_cell(cell: &Cell) -> Self {
        (*cell != Cell::Null).then(|| String::from_cell(cell))
    }
    fn render(&self) -> Option<String> {
        self.clone()
    }
}

impl Data for i32 {
    fn serde() -> impl Serde<Self> + 'static {
        Serdes::i32()
    }
    fn from_cell(cell: &Cell) -> Self {
        let n = cell.int();
        i32::try_from(n).unwrap_or_else(|_| panic!("the cell {n} does not fit an i32"))
    }
    fn render(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl Data for i64 {
    fn serde() -> impl Serde<Self> + 'static {
        Serdes::i64()
    }
    fn from_cell(cell: &Cell) -> Self {
        cell.int()
    }
    fn render(&self) -> Option<String> {
        Some(self.to_string())
    }
}
