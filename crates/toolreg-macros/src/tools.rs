//! `#[tools]`: `#[tool]` on the methods of an impl block, whose `&self` is
//! the tool's state.
//!
//! Each `#[tool]` method is read by the same rule as a free function
//! (`crate::tool`); what differs is where the code goes. The impl block stays
//! as written, without the `#[tool]` attributes; beside it, in an anonymous
//! `const _: () = { .. }`, each tool gets a hidden module with its `Args`,
//! constants and `declaration()` (as a free function's `<fn>_tool` module),
//! and a second impl block of the same type adds the generated API:
//!
//! - per method `m`, with `m`'s visibility: `M_TOOL_NAME`,
//!   `m_tool_declaration()` and `m_tool(&self)`;
//! - for the block, with the visibility of its most visible tool method:
//!   `TOOL_NAMES`, `tool_declarations()` and `tool_registrations(&self)`.
//!
//! The state is `Self: Clone + Send + Sync + 'static`: a registration holds
//! one clone of `self` in an `Arc` and lends it to every call, and
//! `tool_registrations` shares one clone among all the block's tools.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, ImplItem, ItemImpl, Path, Visibility};

use crate::tool::codegen::{self, Target, Vis};
use crate::tool::params::{Place, strip_parameter_attrs};
use crate::tool::{Errors, Options, Tool};

/// `#[tools(..)]` as written.
#[derive(Default)]
pub(crate) struct ToolsOptions {
    krate: Option<Path>,
}

impl ToolsOptions {
    /// Read one `key = value` of `#[tools(..)]`.
    pub(crate) fn parse(&mut self, meta: syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
        if meta.path.is_ident("crate") {
            self.krate = Some(meta.value()?.parse()?);
            Ok(())
        } else {
            Err(meta.error("unknown #[tools] option; expected `crate = path` (the tools' own options go on #[tool])"))
        }
    }
}

/// A `#[tool]` method, read.
struct Method {
    tool: Tool,
    vis: Visibility,
}

/// The impl block as written (without its `#[tool]` attributes) and the
/// generated API beside it; or, on any error, all errors and the block with
/// the attributes `#[tool]` gives a meaning to taken off, so that it adds no
/// errors of its own.
pub(crate) fn expand(options: ToolsOptions, item: &mut ItemImpl) -> TokenStream {
    let mut errors = Errors::default();
    check_impl(item, &mut errors);
    let mut methods = Vec::new();
    let mut tool_positions = Vec::new();
    for (position, impl_item) in item.items.iter_mut().enumerate() {
        let ImplItem::Fn(method) = impl_item else { continue };
        let Some(mut tool_options) = take_tool_attr(&mut method.attrs, &mut errors) else { continue };
        if tool_options.krate.is_none() {
            tool_options.krate.clone_from(&options.krate);
        }
        let tool = Tool::parse(tool_options, &method.attrs, &mut method.sig, Place::Method, &mut errors);
        tool_positions.push(position);
        methods.push(Method { tool, vis: method.vis.clone() });
    }
    if methods.is_empty() {
        errors.push(syn::Error::new(
            item.impl_token.span(),
            "#[tools] found no method marked #[tool] in this impl block",
        ));
    }
    if let Err(error) = errors.finish() {
        for position in tool_positions {
            if let ImplItem::Fn(method) = &mut item.items[position] {
                strip_parameter_attrs(&mut method.sig);
            }
        }
        let error = error.to_compile_error();
        return quote!(#error #item);
    }
    let generated = generate(item, &methods);
    quote!(#item #generated)
}

/// What `#[tools]` cannot go on.
fn check_impl(item: &ItemImpl, errors: &mut Errors) {
    if let Some((_, path, _)) = &item.trait_ {
        errors.push(syn::Error::new(
            path.span(),
            "#[tools] goes on an inherent impl block (`impl Type { .. }`), not on a trait impl",
        ));
    }
    if !item.generics.params.is_empty() || item.generics.where_clause.is_some() {
        errors.push(syn::Error::new(
            item.generics.span(),
            "#[tools] does not support generic impl blocks: each tool's argument schema must be one concrete type",
        ));
    }
}

/// Take the `#[tool]` or `#[tool(..)]` attribute off a method and read it.
fn take_tool_attr(attrs: &mut Vec<Attribute>, errors: &mut Errors) -> Option<Options> {
    let is_tool = |attr: &Attribute| attr.path().segments.last().is_some_and(|s| s.ident == "tool");
    let mut found: Option<Options> = None;
    for attr in attrs.iter().filter(|a| is_tool(a)) {
        if found.is_some() {
            errors.push(syn::Error::new(attr.span(), "a method takes one #[tool] attribute"));
            continue;
        }
        let mut options = Options::default();
        let parsed = match &attr.meta {
            syn::Meta::Path(_) => Ok(()),
            syn::Meta::List(_) => attr.parse_nested_meta(|meta| options.parse(meta)),
            syn::Meta::NameValue(nv) => Err(syn::Error::new(nv.eq_token.span(), "write #[tool] or #[tool(..)]")),
        };
        if let Err(e) = parsed {
            errors.push(e);
        }
        found = Some(options);
    }
    attrs.retain(|a| !is_tool(a));
    found
}

/// The hidden modules and the impl block with the generated API.
fn generate(item: &ItemImpl, methods: &[Method]) -> TokenStream {
    let self_ty = &item.self_ty;
    let modules = methods.iter().map(|Method { tool, .. }| {
        let module = module_ident(tool);
        let items = codegen::module_items(tool, &Vis::private(), &format!("`{}`", tool.ident));
        quote! {
            #[doc(hidden)]
            mod #module {
                #[allow(unused_imports)]
                use super::*;

                #items
            }
        }
    });
    let per_method = methods.iter().map(per_method);
    let aggregates = aggregates(methods);
    // Checked once, on the type, before the registrations' own bounds.
    let state_check = quote_spanned! {self_ty.span()=>
        const _: fn() = || {
            fn tool_state_must_be_clone_send_sync_and_static<
                T: ::core::clone::Clone + ::core::marker::Send + ::core::marker::Sync + 'static,
            >() {
            }
            tool_state_must_be_clone_send_sync_and_static::<#self_ty>();
        };
    };
    quote! {
        const _: () = {
            #(#modules)*

            #state_check

            #[automatically_derived]
            impl #self_ty {
                #(#per_method)*

                #aggregates
            }
        };
    }
}

/// The hidden module of one method's tool.
fn module_ident(tool: &Tool) -> syn::Ident {
    format_ident!("__tool_{}", tool.plain_ident())
}

/// `M_TOOL_NAME`, `m_tool_declaration()`, `m_tool(&self)`, and the hidden
/// function that builds the registration on a given state.
fn per_method(Method { tool, vis }: &Method) -> TokenStream {
    let krate = &tool.krate;
    let span = tool.ident.span();
    let plain = tool.plain_ident();
    let module = module_ident(tool);
    let name_const = format_ident!("{}_TOOL_NAME", plain.to_uppercase(), span = span);
    let declaration_fn = format_ident!("{}_tool_declaration", plain, span = span);
    let tool_fn = format_ident!("{}_tool", plain, span = span);
    let build_fn = format_ident!("__{}_tool_on", plain, span = span);
    let method = &tool.ident;
    let name = &tool.name;
    let registration = codegen::registration(tool, &quote!(#module::), &Target::Method(method));
    let name_doc = format!("The name of the `{name}` tool, made by `#[tool]` of [`Self::{method}`].");
    let declaration_doc =
        format!("The declaration of the `{name}` tool: name, description, input schema and classification.");
    let tool_doc =
        format!("The `{name}` tool, ready for `FunctionRegistry::register`: [`Self::{method}`] on a clone of `self`.");
    quote! {
        #[doc = #name_doc]
        #[allow(dead_code)]
        #vis const #name_const: &'static str = #module::NAME;

        #[doc = #declaration_doc]
        #[allow(dead_code)]
        #vis fn #declaration_fn() -> #krate::ToolDeclaration {
            #module::declaration()
        }

        #[doc = #tool_doc]
        #[allow(dead_code)]
        #vis fn #tool_fn(&self) -> #krate::ToolRegistration {
            Self::#build_fn(::std::sync::Arc::new(::core::clone::Clone::clone(self)))
        }

        #[doc(hidden)]
        fn #build_fn(state: ::std::sync::Arc<Self>) -> #krate::ToolRegistration {
            #registration
        }
    }
}

/// `TOOL_NAMES`, `tool_declarations()` and `tool_registrations(&self)`,
/// with the visibility of the most visible tool method.
fn aggregates(methods: &[Method]) -> TokenStream {
    let vis = widest(methods.iter().map(|m| &m.vis));
    let krate = &methods[0].tool.krate;
    let modules: Vec<_> = methods.iter().map(|m| module_ident(&m.tool)).collect();
    let builds = methods.iter().map(|m| format_ident!("__{}_tool_on", m.tool.plain_ident()));
    quote! {
        /// The names of the tools of this impl block's `#[tool]` methods, in the order written.
        #[allow(dead_code)]
        #vis const TOOL_NAMES: &'static [&'static str] = &[#(#modules::NAME),*];

        /// The declarations of this impl block's tools, in the order written.
        #[allow(dead_code)]
        #vis fn tool_declarations() -> ::std::vec::Vec<#krate::ToolDeclaration> {
            ::std::vec![#(#modules::declaration()),*]
        }

        /// This impl block's tools, in the order written, ready for
        /// `register_tools!`; they share one clone of `self`.
        #[allow(dead_code)]
        #vis fn tool_registrations(&self) -> ::std::vec::Vec<#krate::ToolRegistration> {
            let state = ::std::sync::Arc::new(::core::clone::Clone::clone(self));
            ::std::vec![#(Self::#builds(::std::sync::Arc::clone(&state))),*]
        }
    }
}

/// The most visible of the methods' visibilities (the first of equals).
fn widest<'a>(all: impl Iterator<Item = &'a Visibility>) -> Visibility {
    let rank = |vis: &Visibility| match vis {
        Visibility::Public(_) => 3,
        Visibility::Restricted(r) if r.path.is_ident("crate") => 2,
        Visibility::Restricted(r) if r.path.is_ident("self") => 0,
        Visibility::Restricted(_) => 1,
        Visibility::Inherited => 0,
    };
    let mut best = Visibility::Inherited;
    for vis in all {
        if rank(vis) > rank(&best) {
            best = vis.clone();
        }
    }
    best
}
