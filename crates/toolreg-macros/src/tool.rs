//! `#[tool]`: the expansion.
//!
//! The rule for parameters, in full (the user-facing text is on
//! `toolreg::tool`):
//! - a parameter without an attribute is one JSON argument, named after the
//!   parameter; its doc comment, `#[serde]` and `#[schemars]` attributes move
//!   to the field of the generated `Args` struct, and its type must be
//!   `Deserialize + JsonSchema` (checked through `__private::ToolArgument`,
//!   on that parameter);
//! - except a lone one: when the function has exactly one such parameter,
//!   with no attribute at all, whether it is the whole argument object is
//!   decided from its type's schema (`__private::is_argument_object`: an
//!   object with properties, that is, a struct with named fields), where the
//!   registration and declaration are built. This crate cannot see the
//!   type's definition, so it emits both forms and the schema picks one;
//! - `#[arg]` keeps a parameter one named argument whatever its type;
//! - `#[context]` marks a parameter taken from the call's `CallContext`
//!   (through `__private::FromCallContext`);
//! - `#[args]` marks the one parameter that is the whole argument object
//!   (a type that derives `ToolArgs`); no parameter is then a JSON argument.
//!
//! The return type is sorted by `__private::ReturnKind` in the generated
//! code, by trait: `Result<T, E>` is the tool's success or failure, anything
//! else a success.

use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, ItemFn, LitStr, Pat, Path, Type, Visibility};

#[derive(Default)]
pub(crate) struct Options {
    name: Option<LitStr>,
    description: Option<LitStr>,
    safety: Option<LitStr>,
    scope: Option<LitStr>,
    categories: Vec<LitStr>,
    exclusive: Option<LitStr>,
    title: Option<LitStr>,
    idempotent: Option<syn::LitBool>,
    open_world: Option<syn::LitBool>,
    krate: Option<Path>,
}

impl Options {
    pub(crate) fn parse(&mut self, meta: syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
        let key = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
        match key.as_str() {
            "name" => self.name = Some(meta.value()?.parse()?),
            "description" => self.description = Some(meta.value()?.parse()?),
            "safety" => self.safety = Some(meta.value()?.parse()?),
            "scope" => self.scope = Some(meta.value()?.parse()?),
            "category" => self.categories.push(meta.value()?.parse()?),
            "exclusive" => self.exclusive = Some(meta.value()?.parse()?),
            "title" => self.title = Some(meta.value()?.parse()?),
            "idempotent" => self.idempotent = Some(meta.value()?.parse()?),
            "open_world" => self.open_world = Some(meta.value()?.parse()?),
            "crate" => self.krate = Some(meta.value()?.parse()?),
            _ => {
                return Err(meta.error(
                    "unknown #[tool] option; expected one of: name, description, safety, category, scope, exclusive, title, idempotent, open_world, crate",
                ));
            }
        }
        Ok(())
    }
}

/// A parameter of the tool function that is one JSON argument.
struct Param {
    ident: Ident,
    ty: Type,
    attrs: Vec<Attribute>,
    /// Marked `#[arg]`: one named argument even when it is the only one.
    marked: bool,
}

/// What one parameter of the tool function is passed, in order.
enum Input {
    /// `#[context] cx: T`: taken from the call context.
    Context(Box<Type>),
    /// `#[args] x: T`: the whole argument object.
    Args,
    /// `x: T`: the argument named `x`.
    Arg,
}

/// A parameter attribute: `#[context]`, `#[args]` or `#[arg]`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Marker {
    Context,
    Args,
    Arg,
}

struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }
}

pub(crate) fn expand(options: Options, function: &mut ItemFn) -> syn::Result<TokenStream2> {
    let mut errors = Errors(None);
    let sig = &function.sig;
    let fn_ident = sig.ident.clone();
    let krate = options.krate.clone().unwrap_or_else(|| syn::parse_quote!(::toolreg));

    if let Some(constness) = &sig.constness {
        errors.push(syn::Error::new(constness.span(), "#[tool] does not support `const fn`"));
    }
    if let Some(unsafety) = &sig.unsafety {
        errors.push(syn::Error::new(
            unsafety.span(),
            "#[tool] does not support `unsafe fn`: a model may call it with any arguments",
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(syn::Error::new(
            sig.generics.span(),
            "#[tool] does not support generic functions: the argument schema must be one concrete type",
        ));
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(syn::Error::new(variadic.span(), "#[tool] does not support variadic functions"));
    }

    // The name is checked by the core's rule, in a constant of the generated
    // code; here it is only chosen, with the span an error points at.
    let (name, name_span) = match &options.name {
        Some(lit) => (lit.value(), lit.span()),
        None => (fn_ident.to_string().trim_start_matches("r#").to_owned(), fn_ident.span()),
    };

    let description = match &options.description {
        Some(lit) if lit.value().trim().is_empty() => {
            errors.push(syn::Error::new(lit.span(), "the tool description must not be empty"));
            String::new()
        }
        Some(lit) => lit.value(),
        None => match doc_text(&function.attrs) {
            Some(doc) => doc,
            None => {
                errors.push(syn::Error::new(
                    fn_ident.span(),
                    "a tool needs a description for the model: add a doc comment or #[tool(description = \"...\")]",
                ));
                String::new()
            }
        },
    };

    // Safety and scope are parsed by the core's `const fn`s, in constants.
    let safety = match &options.safety {
        None => quote!(#krate::SafetyLevel::Dangerous),
        Some(lit) => quote_spanned!(lit.span()=> #krate::__private::safety(#lit)),
    };
    let scope = match &options.scope {
        None => quote!(#krate::Scope::Custom),
        Some(lit) => quote_spanned!(lit.span()=> #krate::__private::scope(#lit)),
    };
    let categories = &options.categories;
    let exclusive = options.exclusive.iter();
    let title = options.title.iter();
    let idempotent = options.idempotent.iter();
    let open_world = options.open_world.iter();

    // Parameters: each is one JSON argument, unless marked.
    let mut inputs: Vec<Input> = Vec::new();
    let mut params: Vec<Param> = Vec::new();
    let mut whole: Option<Type> = None;
    for input in function.sig.inputs.iter_mut() {
        let typed = match input {
            FnArg::Receiver(receiver) => {
                errors.push(syn::Error::new(
                    receiver.span(),
                    "#[tool] goes on free functions, not methods: a tool cannot take `self`",
                ));
                continue;
            }
            FnArg::Typed(typed) => typed,
        };
        let marker = take_marker(&mut typed.attrs, &mut errors);
        if matches!(marker, Some((Marker::Context | Marker::Args, _)))
            && let Some(attr) = typed.attrs.iter().find(|a| is_argument_attr(a))
        {
            errors.push(syn::Error::new(
                attr.span(),
                "doc comments, `#[serde]` and `#[schemars]` describe one JSON argument, \
                 which a `#[context]` or `#[args]` parameter is not",
            ));
        }
        match marker {
            Some((Marker::Context, _)) => inputs.push(Input::Context(typed.ty.clone())),
            Some((Marker::Args, span)) => {
                if let Err(e) = check_owned(&typed.ty) {
                    errors.push(e);
                }
                if whole.is_some() {
                    errors.push(syn::Error::new(span, "a tool takes at most one `#[args]` parameter"));
                }
                whole = Some((*typed.ty).clone());
                inputs.push(Input::Args);
            }
            None | Some((Marker::Arg, _)) => {
                if let Err(e) = check_owned(&typed.ty) {
                    errors.push(e);
                }
                let ident = match &*typed.pat {
                    Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => pat.ident.clone(),
                    other => {
                        errors.push(syn::Error::new(
                            other.span(),
                            "a JSON argument is named after its parameter, so the parameter must be a plain \
                             name (`x: T`); patterns are allowed on `#[args]` and `#[context]` parameters",
                        ));
                        continue;
                    }
                };
                // Doc comments and serde/schemars attributes move to the generated field.
                let (moved, kept): (Vec<Attribute>, Vec<Attribute>) = typed.attrs.drain(..).partition(is_argument_attr);
                typed.attrs = kept;
                inputs.push(Input::Arg);
                let marked = marker.is_some();
                params.push(Param { ident, ty: (*typed.ty).clone(), attrs: moved, marked });
            }
        }
    }
    if whole.is_some() {
        for param in &params {
            let ident = &param.ident;
            errors.push(syn::Error::new(
                ident.span(),
                format!(
                    "`{ident}` would be a JSON argument beside the `#[args]` object; move it into the \
                     argument struct, or drop `#[args]` so that every parameter is one argument"
                ),
            ));
        }
    }

    // The generated module, its items, and the items of a module nested in it.
    let (mod_vis, item_vis, nested_vis) = match visibilities(&function.vis) {
        Ok(v) => v,
        Err(e) => {
            errors.push(e);
            (quote!(), quote!(pub(super)), quote!(pub(in super::super)))
        }
    };

    if let Some(error) = errors.0 {
        return Err(error);
    }

    let is_async = function.sig.asyncness.is_some();
    let mod_ident = format_ident!("{}_tool", fn_ident.to_string().trim_start_matches("r#"));
    let krate_str = quote!(#krate).to_string().replace(' ', "");
    let serde_crate = format!("{krate_str}::__private::serde");
    let schemars_crate = format!("{krate_str}::__private::schemars");

    // A lone parameter without any attribute: its type's schema decides
    // whether it is the whole argument object (see the module docs).
    let lone = match (&whole, params.as_slice()) {
        (None, [only]) if !only.marked && only.attrs.is_empty() => Some(&only.ty),
        _ => None,
    };

    let (args_struct, args_ty) = match &whole {
        Some(ty) => {
            // The bound is checked where the type is written, once.
            let check = quote_spanned! {ty.span()=>
                const _: fn() = || {
                    fn args_object<T: #krate::__private::ArgsObject>() {}
                    args_object::<#ty>();
                };
            };
            (check, quote!(#ty))
        }
        None => {
            // The struct lives in a module of its own, whose only item is the
            // struct under a name no user type is likely to have: the
            // parameter types, resolved there through `use super::super::*`,
            // then mean what they mean beside the function, even a user
            // type called `Args`.
            //
            // Each field's type goes through `ToolArgument`, spanned on the
            // parameter's type, which is how the `CallContext` mistake gets
            // its own message.
            let fields = params.iter().map(|p| {
                let Param { ident, ty, attrs, .. } = p;
                let ty = quote_spanned!(ty.span()=> <#ty as #krate::__private::ToolArgument>::Type);
                quote!(#(#attrs)* #nested_vis #ident: #ty,)
            });
            let doc = match lone {
                None => format!(
                    "Arguments of the `{name}` tool, one field per parameter of [`{fn_ident}`](super::{fn_ident})."
                ),
                // Both forms are built; the schema of the parameter's type picks one.
                Some(_) => format!(
                    "Arguments of the `{name}` tool when its one parameter is one named argument: used only if \
                     the parameter's type is not itself an argument object (a struct with named fields), which \
                     is then the whole argument object (see `toolreg::schema::is_argument_object`)."
                ),
            };
            let checks = params.iter().map(|p| {
                let ty = &p.ty;
                quote_spanned!(ty.span()=> const _: () = <#ty as #krate::__private::ToolArgument>::CHECK;)
            });
            let types = params.iter().map(|p| &p.ty);
            let values = params.iter().map(|p| {
                let Param { ident, ty, .. } = p;
                quote!(<#ty as #krate::__private::ToolArgument>::into_param(self.#ident))
            });
            // The lone parameter's type, named here where it means what it
            // means beside the function, for the whole-object form.
            let lone_items = lone.map(|ty| {
                quote! {
                    /// The lone parameter's type, as the arguments struct holds it.
                    pub(super) type __Lone = <#ty as #krate::__private::ToolArgument>::Type;

                    /// The parameter's value from the whole argument object.
                    #[inline]
                    pub(super) fn lone_params(value: __Lone) -> (#ty,) {
                        (<#ty as #krate::__private::ToolArgument>::into_param(value),)
                    }
                }
            });
            let args_struct = quote! {
                #[doc(hidden)]
                mod __arguments {
                    #[allow(unused_imports)]
                    use super::super::*;

                    #[doc = #doc]
                    #[derive(#krate::__private::serde::Deserialize, #krate::__private::schemars::JsonSchema)]
                    #[serde(crate = #serde_crate, rename = "Args")]
                    #[schemars(crate = #schemars_crate, transform = #krate::__private::without_description)]
                    #[allow(non_snake_case, non_camel_case_types, missing_docs)]
                    #nested_vis struct __ToolArguments {
                        #(#fields)*
                    }

                    #(#checks)*

                    impl __ToolArguments {
                        /// The parameters' values, in order.
                        #[inline]
                        #[allow(clippy::unused_unit)]
                        pub(in super::super) fn into_params(self) -> (#(#types,)*) {
                            (#(#values,)*)
                        }
                    }

                    #lone_items
                }

                #[doc(inline)]
                #item_vis use __arguments::__ToolArguments as Args;
            };
            (args_struct, quote!(Args))
        }
    };

    let mut position = 0usize;
    let call_args: Vec<TokenStream2> = inputs
        .iter()
        .map(|input| match input {
            Input::Context(ty) => quote_spanned! {ty.span()=>
                <#ty as #krate::__private::FromCallContext<'_>>::from_call_context(&cx)
            },
            Input::Args => quote!(args),
            Input::Arg => {
                let index = syn::Index::from(position);
                position += 1;
                quote!(params.#index)
            }
        })
        .collect();
    let call = quote!(super::#fn_ident(#(#call_args),*));
    let call = if is_async { quote!(#call.await) } else { call };
    // The registration for arguments of type `args_ty`, unpacked into the
    // parameters by `unpack`.
    let constructor = |args_ty: &TokenStream2, unpack: &TokenStream2| {
        let body = quote! {
            #[allow(unused_imports)]
            use #krate::__private::{IsPlain as _, IsResult as _};
            let _ = &cx;
            #unpack
            let out = #call;
            (&#krate::__private::ReturnKind::of(&out)).kind().wrap(out)
        };
        if is_async {
            quote! {
                #krate::ToolRegistration::from_async_with_context(
                    NAME,
                    |cx: #krate::CallContext, args: #args_ty| async move { #body },
                    declaration(),
                )
            }
        } else {
            quote! {
                #krate::ToolRegistration::from_sync_with_context(
                    NAME,
                    |cx: #krate::CallContext, args: #args_ty| { #body },
                    declaration(),
                )
            }
        }
    };
    let unpack = if whole.is_none() { quote!(let params = args.into_params();) } else { quote!() };
    let named = constructor(&args_ty, &unpack);
    let (whole_object, registration, declared) = match lone {
        None => (quote!(), named, quote!(#krate::ToolDeclaration::for_args::<#args_ty>(NAME, DESCRIPTION))),
        Some(_) => {
            let lone_ty = quote!(__arguments::__Lone);
            let as_whole = constructor(&lone_ty, &quote!(let params = __arguments::lone_params(args);));
            (
                quote! {
                    /// Whether the lone parameter is the whole argument object:
                    /// its type's schema is an object with properties.
                    fn __whole_object() -> bool {
                        #krate::__private::is_argument_object::<#lone_ty>()
                    }
                },
                quote!(if __whole_object() { #as_whole } else { #named }),
                quote! {
                    if __whole_object() {
                        #krate::ToolDeclaration::for_args::<#lone_ty>(NAME, DESCRIPTION)
                    } else {
                        #krate::ToolDeclaration::for_args::<#args_ty>(NAME, DESCRIPTION)
                    }
                },
            )
        }
    };
    let mod_doc = format!("The `{name}` tool, generated by `#[tool]` from [`{fn_ident}`](super::{fn_ident}).");
    let name_checked = quote_spanned!(name_span=> #krate::__private::tool_name(#name));

    Ok(quote! {
        #function

        #[doc = #mod_doc]
        #mod_vis mod #mod_ident {
            #[allow(unused_imports)]
            use super::*;

            #args_struct

            /// The name the model calls this tool by.
            #item_vis const NAME: &str = NAME_CHECKED;

            /// What the model is told the tool does.
            #item_vis const DESCRIPTION: &str = #description;

            // The core's rules for names, safety levels and scopes, applied
            // at compile time: a bad value stops the build with the rule's
            // message, pointing at the option.
            const NAME_CHECKED: &str = #name_checked;
            const SAFETY: #krate::SafetyLevel = #safety;
            const SCOPE: #krate::Scope = #scope;
            const _: () = {
                let _ = NAME_CHECKED;
                let _ = SAFETY;
                let _ = SCOPE;
            };

            /// The tool's declaration: name, description, input schema and classification.
            #item_vis fn declaration() -> #krate::ToolDeclaration {
                (#declared)
                    .with_safety(SAFETY)
                    .with_scope(SCOPE)
                    #( .with_category(#categories) )*
                    #( .with_exclusive_key(#exclusive) )*
                    #( .with_title(#title) )*
                    #( .with_idempotent(#idempotent) )*
                    #( .with_open_world(#open_world) )*
            }

            #[doc(inline)]
            #item_vis use super::#fn_ident as execute;

            #whole_object

            /// The function and its declaration, ready for `FunctionRegistry::register`.
            #item_vis fn registration() -> #krate::ToolRegistration {
                #registration
            }
        }
    })
}

/// Take the `#[context]`, `#[args]` or `#[arg]` attribute off a parameter.
fn take_marker(attrs: &mut Vec<Attribute>, errors: &mut Errors) -> Option<(Marker, Span)> {
    let mut found: Option<(Marker, Span)> = None;
    attrs.retain(|attr| {
        let marker = if attr.path().is_ident("context") {
            Marker::Context
        } else if attr.path().is_ident("args") {
            Marker::Args
        } else if attr.path().is_ident("arg") {
            Marker::Arg
        } else {
            return true;
        };
        if !matches!(attr.meta, syn::Meta::Path(_)) {
            errors.push(syn::Error::new(attr.span(), "`#[context]`, `#[args]` and `#[arg]` take no options"));
        } else if found.is_some() {
            errors.push(syn::Error::new(
                attr.span(),
                "a parameter is one of `#[context]`, `#[args]` or `#[arg]`, not several",
            ));
        } else {
            found = Some((marker, attr.span()));
        }
        false
    });
    found
}

/// Take the attributes `#[tool]` gives a meaning to off every parameter, so
/// that the function emitted beside an error compiles on its own.
pub(crate) fn strip_parameter_attrs(function: &mut ItemFn) {
    for input in function.sig.inputs.iter_mut() {
        if let FnArg::Typed(typed) = input {
            typed
                .attrs
                .retain(|a| !is_argument_attr(a) && !["context", "args", "arg"].iter().any(|m| a.path().is_ident(m)));
        }
    }
}

/// Attributes that describe one JSON argument, and move to its field.
fn is_argument_attr(attr: &Attribute) -> bool {
    attr.path().is_ident("doc") || attr.path().is_ident("serde") || attr.path().is_ident("schemars")
}

/// Doc comment lines joined: lines of a paragraph with spaces, paragraphs with a blank line.
fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &attr.meta
            && let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = &nv.value
        {
            lines.push(s.value().trim().to_owned());
        }
    }
    let mut out = String::new();
    for line in lines {
        if line.is_empty() {
            if !out.is_empty() && !out.ends_with("\n\n") {
                out.push_str("\n\n");
            }
        } else {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push(' ');
            }
            out.push_str(&line);
        }
    }
    let out = out.trim().to_owned();
    (!out.is_empty()).then_some(out)
}

/// Tool arguments are deserialised from JSON the tool owns.
fn check_owned(ty: &Type) -> syn::Result<()> {
    match ty {
        Type::Reference(r) => {
            Err(syn::Error::new(r.span(), "tool arguments must be owned: use `String` for `&str`, `Vec<T>` for `&[T]`"))
        }
        Type::ImplTrait(t) => {
            Err(syn::Error::new(t.span(), "tool arguments cannot be `impl Trait`: name a concrete type"))
        }
        Type::BareFn(t) => Err(syn::Error::new(t.span(), "a tool argument cannot be a function: it comes from JSON")),
        Type::TraitObject(t) => {
            Err(syn::Error::new(t.span(), "a tool argument cannot be a trait object: it comes from JSON"))
        }
        _ => Ok(()),
    }
}

/// Visibility of the generated module, of the items inside it, and of the
/// items of the module nested in it for the arguments struct, so that
/// `execute` re-exports the function no further than the function itself.
fn visibilities(vis: &Visibility) -> syn::Result<(TokenStream2, TokenStream2, TokenStream2)> {
    match vis {
        Visibility::Inherited => Ok((quote!(), quote!(pub(super)), quote!(pub(in super::super)))),
        Visibility::Public(_) => Ok((quote!(pub), quote!(pub), quote!(pub))),
        Visibility::Restricted(r) if r.path.is_ident("crate") => {
            Ok((quote!(pub(crate)), quote!(pub(crate)), quote!(pub(crate))))
        }
        Visibility::Restricted(r) if r.path.is_ident("super") => {
            Ok((quote!(pub(super)), quote!(pub(in super::super)), quote!(pub(in super::super::super))))
        }
        Visibility::Restricted(r) if r.path.is_ident("self") => {
            Ok((quote!(), quote!(pub(super)), quote!(pub(in super::super))))
        }
        other => Err(syn::Error::new(
            other.span(),
            "#[tool] supports private, `pub`, `pub(crate)` and `pub(super)` functions",
        )),
    }
}
