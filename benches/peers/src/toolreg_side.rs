//! The tools as `#[tool]` functions with plain parameters, and a registry
//! holding them. rmcp and rig call these same functions.

use std::collections::HashMap;

use toolreg::{FunctionRegistry, RegistryError, register_tools, tool};

use crate::args::{Customer, Shape, Unit};

/// Add two numbers.
#[tool(safety = "safe")]
pub fn add(a: f64, b: f64) -> f64 {
    a + b
}

/// Price a parcel to a customer.
#[tool(safety = "safe")]
pub fn ship(customer: Customer, weight_kg: f64) -> f64 {
    let rate = if customer.address.city == "Paris" { 1.5 } else { 2.0 };
    weight_kg * rate + customer.address.zip.len() as f64
}

/// Convert a temperature between units.
#[tool(safety = "safe")]
pub fn convert(value: f64, from: Unit, to: Unit) -> f64 {
    let kelvin = match from {
        Unit::Celsius => value + 273.15,
        Unit::Fahrenheit => (value - 32.0) * 5.0 / 9.0 + 273.15,
        Unit::Kelvin => value,
    };
    match to {
        Unit::Celsius => kelvin - 273.15,
        Unit::Fahrenheit => (kelvin - 273.15) * 9.0 / 5.0 + 32.0,
        Unit::Kelvin => kelvin,
    }
}

/// Area of a scaled shape.
#[tool(safety = "safe")]
pub fn area(shape: Shape, scale: f64) -> f64 {
    match shape {
        Shape::Circle { radius } => std::f64::consts::PI * (radius * scale).powi(2),
        Shape::Rect { width, height } => width * height * scale * scale,
    }
}

/// Sum of the samples plus the sum of the weights.
#[tool(safety = "safe")]
pub fn stats(values: Vec<f64>, weights: HashMap<String, f64>) -> f64 {
    values.iter().sum::<f64>() + weights.values().sum::<f64>()
}

/// A registry with the five tools.
pub fn registry() -> Result<FunctionRegistry, RegistryError> {
    let mut registry = FunctionRegistry::new();
    register_tools!(registry, [add_tool, ship_tool, convert_tool, area_tool, stats_tool])?;
    Ok(registry)
}
