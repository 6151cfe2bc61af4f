use toolreg::tool;

/// Not JSON.
#[tool(example = "{city: Paris}")]
fn not_json(city: String) -> String {
    city
}

/// Not an object.
#[tool(example = "[1, 2]")]
fn not_object(city: String) -> String {
    city
}

fn main() {}
