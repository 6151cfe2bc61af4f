//! The same tools written for toolreg, rmcp and rig, so that one bench can
//! call each of them by name on the same argument JSON.
//!
//! Each tool's work is one plain function in [`toolreg_side`] (a `#[tool]`
//! fn stays callable as itself); the rmcp and rig tools call those same
//! functions, so the three sides differ only in how they find the tool, read
//! its arguments and shape its answer.
//!
//! - [`args`]: the argument types, shared by every side.
//! - [`cases`]: each tool shape with one good and one bad argument object.
//! - [`toolreg_side`], [`rmcp_side`], [`rig_side`]: the tools in each framework.
//! - [`fillers`]: many tools with generated names, for listing and registering.

pub mod args;
pub mod cases;
pub mod fillers;
#[cfg(feature = "rig")]
pub mod rig_side;
pub mod rmcp_side;
pub mod toolreg_side;
