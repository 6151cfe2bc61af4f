//! Argument types. toolreg takes each field as one `#[tool]` parameter; rmcp
//! and rig take the whole struct. The schemas are the same because every
//! side derives them with schemars 1.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `add`: two numbers.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AddArgs {
    /// The first number.
    pub a: f64,
    /// The second number.
    pub b: f64,
}

/// A postal address, nested inside [`Customer`].
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Address {
    /// Street and number.
    pub street: String,
    /// City.
    pub city: String,
    /// Postal code, as text (it may start with a zero).
    pub zip: String,
}

/// A customer with an address: a struct nesting a struct.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Customer {
    /// Full name.
    pub name: String,
    /// Where parcels go.
    pub address: Address,
}

/// Arguments of `ship`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ShipArgs {
    /// Who receives the parcel.
    pub customer: Customer,
    /// Parcel weight in kilograms.
    pub weight_kg: f64,
}

/// A temperature unit: an enum of plain choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Degrees Celsius.
    Celsius,
    /// Degrees Fahrenheit.
    Fahrenheit,
    /// Kelvin.
    Kelvin,
}

/// Arguments of `convert`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ConvertArgs {
    /// The temperature to convert.
    pub value: f64,
    /// Its unit.
    pub from: Unit,
    /// The unit wanted.
    pub to: Unit,
}

/// A shape: an enum whose variants carry fields.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Shape {
    /// A circle.
    Circle {
        /// Its radius.
        radius: f64,
    },
    /// A rectangle.
    Rect {
        /// Its width.
        width: f64,
        /// Its height.
        height: f64,
    },
}

/// Arguments of `area`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AreaArgs {
    /// The shape to measure.
    pub shape: Shape,
    /// A factor applied to every length.
    pub scale: f64,
}

/// Arguments of `stats`: a list and a map.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StatsArgs {
    /// The samples.
    pub values: Vec<f64>,
    /// A weight per label.
    pub weights: HashMap<String, f64>,
}

/// The JSON Schema of `T` as a value, as rig's `parameters()` wants it.
pub fn schema_value<T: JsonSchema>() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default()
}
