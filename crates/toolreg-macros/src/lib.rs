//! `#[tool]`, the attribute that turns a Rust function into a toolreg tool;
//! `#[tools]`, which does the same for the methods of an impl block, whose
//! `&self` is the tools' state; and `#[derive(ToolArgs)]`, which marks a
//! struct as a tool's whole argument object.
//!
//! Use them through the `toolreg` crate (`use toolreg::{tool, tools,
//! ToolArgs};`), whose docs describe them in full. Generated code names only
//! `::toolreg::__private` and toolreg's public types (override the path with
//! `#[tool(crate = path)]`, `#[tools(crate = path)]` or
//! `#[toolreg(crate = path)]`).
//!
//! The macros decide nothing by type names: which parameter is what is said
//! by attributes (`#[context]`, `#[args]`, `#[arg]`) or, for a lone
//! parameter, by its type's schema where the registration is built; and
//! everything else is left to traits the generated code names, so that the
//! compiler, not this crate, answers and reports on each parameter.
//!
//! Modules: `tool` reads a tool function (its options, the parameter rule)
//! and writes its code; `tools` places that code for methods; `args` is the
//! derive.

use proc_macro::TokenStream;
use syn::{DeriveInput, ItemFn, ItemImpl, parse_macro_input};

mod args;
mod tool;
mod tools;

/// Turn a free `fn` or `async fn` into a tool. See the `toolreg` crate docs.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut options = tool::Options::default();
    let parser = syn::meta::parser(|meta| options.parse(meta));
    parse_macro_input!(attr with parser);
    let mut function = parse_macro_input!(item as ItemFn);
    match tool::expand_fn(options, &mut function) {
        Ok(tokens) => tokens.into(),
        Err(error) => {
            // Keep the function, with its parameter attributes taken off, so
            // its own uses add no errors of their own.
            let error = error.to_compile_error();
            tool::params::strip_parameter_attrs(&mut function.sig);
            quote::quote!(#error #function).into()
        }
    }
}

/// Turn the `#[tool]` methods of an inherent impl block into tools that
/// hold `self` as their state. See the `toolreg` crate docs.
#[proc_macro_attribute]
pub fn tools(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut options = tools::ToolsOptions::default();
    let parser = syn::meta::parser(|meta| options.parse(meta));
    parse_macro_input!(attr with parser);
    let mut block = parse_macro_input!(item as ItemImpl);
    tools::expand(options, &mut block).into()
}

/// Mark a struct with named fields as a tool's whole argument object, for a
/// `#[args]` parameter of a `#[tool]` function. See the `toolreg` crate docs.
#[proc_macro_derive(ToolArgs, attributes(toolreg))]
pub fn derive_tool_args(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    args::expand(&input).unwrap_or_else(syn::Error::into_compile_error).into()
}
