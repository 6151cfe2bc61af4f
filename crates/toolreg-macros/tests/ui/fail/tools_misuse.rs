use toolreg::tools;

#[derive(Clone)]
struct State;

#[tools]
impl State {
    /// Mutable receiver.
    #[tool]
    fn bump(&mut self) {}

    /// By value.
    #[tool]
    fn consume(self) {}

    /// No receiver.
    #[tool]
    fn stateless(x: u32) -> u32 {
        x
    }

    /// `Self` in an argument's type.
    #[tool]
    fn this(&self, _other: Option<Box<Self>>) {}

    /// Two attributes.
    #[tool]
    #[tool(safety = "safe")]
    fn twice(&self) {}
}

trait Named {
    fn name(&self) -> String;
}

#[tools]
impl Named for State {
    /// A trait method.
    #[tool]
    fn name(&self) -> String {
        String::new()
    }
}

struct Generic<T>(T);

#[tools]
impl<T: Clone + Send + Sync + 'static> Generic<T> {
    /// Generic state.
    #[tool]
    fn get(&self) {}
}

struct Empty;

#[tools(safety = "safe")]
impl Empty {
    fn not_a_tool(&self) {}
}

struct Quiet;

#[tools]
impl Quiet {
    fn not_a_tool_either(&self) {}
}

fn main() {}
