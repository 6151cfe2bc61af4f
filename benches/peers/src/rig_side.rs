//! The tools as rig `PortableTool`s in a rig `ToolSet` (rig-agent), called
//! with `ToolSet::execute(name, argument_text, context)`, rig's inline
//! dispatch by name.

use std::convert::Infallible;

use rig_agent::tool::ToolSet;
use rig_core::message::ToolName;
use rig_core::tool::{DynamicTool, PortableTool, ToolOutput, ToolResult};
use schemars::JsonSchema;
use serde_json::Value;

use crate::args::{AddArgs, AreaArgs, ConvertArgs, ShipArgs, StatsArgs, schema_value};
use crate::toolreg_side;

macro_rules! rig_tool {
    ($ty:ident, $name:literal, $description:literal, $args:ty, |$a:pat_param| $body:expr) => {
        #[doc = $description]
        #[derive(Debug, Clone, Copy, Default)]
        pub struct $ty;

        impl PortableTool for $ty {
            const NAME: &'static str = $name;
            type Args = $args;
            type Output = f64;
            type Error = Infallible;

            fn description(&self) -> String {
                $description.to_owned()
            }

            fn parameters(&self) -> Value {
                schema_value::<$args>()
            }

            async fn call(&self, $a: $args) -> Result<f64, Infallible> {
                Ok($body)
            }
        }
    };
}

rig_tool!(RigAdd, "add", "Add two numbers.", AddArgs, |AddArgs { a, b }| toolreg_side::add(a, b));
rig_tool!(RigShip, "ship", "Price a parcel to a customer.", ShipArgs, |ShipArgs { customer, weight_kg }| {
    toolreg_side::ship(customer, weight_kg)
});
rig_tool!(
    RigConvert,
    "convert",
    "Convert a temperature between units.",
    ConvertArgs,
    |ConvertArgs { value, from, to }| toolreg_side::convert(value, from, to)
);
rig_tool!(RigArea, "area", "Area of a scaled shape.", AreaArgs, |AreaArgs { shape, scale }| toolreg_side::area(
    shape, scale
));
rig_tool!(
    RigStats,
    "stats",
    "Sum of the samples plus the sum of the weights.",
    StatsArgs,
    |StatsArgs { values, weights }| toolreg_side::stats(values, weights)
);

/// A tool set with the five tools.
pub fn toolset() -> ToolSet {
    let mut set = ToolSet::default();
    set.add_tool(RigAdd);
    set.add_tool(RigShip);
    set.add_tool(RigConvert);
    set.add_tool(RigArea);
    set.add_tool(RigStats);
    set
}

/// Whether a rig result is a success, and its text.
pub fn answer_text(result: &ToolResult) -> Result<String, String> {
    let text = serde_json::to_string(result.output()).unwrap_or_default();
    if result.is_error() { Err(text) } else { Ok(text) }
}

/// A runtime-defined rig tool named `name` with `A`'s schema, for listing
/// and registering many tools (rig's typed tools have a constant name).
pub fn filler_tool<A: JsonSchema>(name: String) -> DynamicTool {
    let name = ToolName::new(name).unwrap_or_else(|e| panic!("filler name: {e}"));
    DynamicTool::new(name, "Filler", schema_value::<A>(), |_args| Box::pin(async { Ok(ToolOutput::json(Value::Null)) }))
}
