//! Many tools with generated names, each taking one of the five argument
//! types in turn, for the listing and registration benches.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use toolreg::{ToolDeclaration, ToolRegistration};

use crate::args::{AddArgs, AreaArgs, ConvertArgs, ShipArgs, StatsArgs};

/// The name of filler tool `i`.
pub fn name(i: usize) -> String {
    format!("tool_{i:06}")
}

/// Call `make::<A>(name(i))` with the argument type for `i`.
macro_rules! by_shape {
    ($i:expr, $make:ident) => {{
        let i = $i;
        match i % 5 {
            0 => $make::<AddArgs>(name(i)),
            1 => $make::<ShipArgs>(name(i)),
            2 => $make::<ConvertArgs>(name(i)),
            3 => $make::<AreaArgs>(name(i)),
            _ => $make::<StatsArgs>(name(i)),
        }
    }};
}

fn toolreg_one<A>(name: String) -> ToolRegistration
where
    A: JsonSchema + DeserializeOwned + Send + 'static,
{
    let declaration = ToolDeclaration::for_args::<A>(name.clone(), "Filler");
    #[cfg(not(feature = "legacy-registration"))]
    {
        let _ = name;
        ToolRegistration::new(declaration, |_: A| Ok::<_, String>(0.0))
    }
    #[cfg(feature = "legacy-registration")]
    ToolRegistration::from_sync(name, |_: A| Ok::<_, String>(0.0), declaration)
}

/// toolreg registrations for tools `0..n`, declared with
/// `ToolDeclaration::for_args`, as a typed tool is.
pub fn toolreg(n: usize) -> Vec<ToolRegistration> {
    (0..n).map(|i| by_shape!(i, toolreg_one)).collect()
}

/// rmcp routes for tools `0..n`.
pub fn rmcp(n: usize) -> Vec<rmcp::handler::server::tool::ToolRoute<crate::rmcp_side::RmcpTools>> {
    use crate::rmcp_side::filler_route;
    (0..n).map(|i| by_shape!(i, filler_route)).collect()
}

/// rig runtime-defined tools for tools `0..n`.
#[cfg(feature = "rig")]
pub fn rig(n: usize) -> Vec<rig_core::tool::DynamicTool> {
    use crate::rig_side::filler_tool;
    (0..n).map(|i| by_shape!(i, filler_tool)).collect()
}
