use std::cell::Cell;
use toolreg::tools;

#[derive(Clone)]
struct Local {
    hits: Cell<u32>,
}

#[tools]
impl Local {
    /// Counts in a `Cell`, which calls on other threads cannot share.
    #[tool(safety = "safe")]
    fn hit(&self) -> u32 {
        self.hits.set(self.hits.get() + 1);
        self.hits.get()
    }
}

struct NotClone;

#[tools]
impl NotClone {
    /// The state cannot be cloned into the registration.
    #[tool(safety = "safe")]
    fn ping(&self) {}
}

fn main() {}
