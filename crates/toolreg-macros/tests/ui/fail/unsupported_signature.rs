use toolreg::tool;

struct Counter;

impl Counter {
    /// A method.
    #[tool]
    fn count(&self, x: i32) -> i32 {
        x
    }
}

/// Generic over T.
#[tool]
fn generic<T: Default>(x: i32) -> i32 {
    x
}

/// Borrows its argument.
#[tool]
fn borrowed(text: &str) -> usize {
    text.len()
}

/// Destructures its argument.
#[tool]
fn pattern((a, b): (i32, i32)) -> i32 {
    a + b
}

fn main() {}
