//! `#[tool]`: the attribute that turns a Rust function into a toolreg tool.
//!
//! Use it through the `toolreg` crate (`use toolreg::tool;`), whose docs
//! describe the attribute in full. Generated code names only
//! `::toolreg::__private` and toolreg's public types (override the path with
//! `#[tool(crate = path)]`).

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, ItemFn, LitStr, Pat, Path, ReturnType, Type, Visibility, parse_macro_input};

/// Turn a free `fn` or `async fn` into a tool. See the `toolreg` crate docs.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut options = Options::default();
    let parser = syn::meta::parser(|meta| options.parse(meta));
    parse_macro_input!(attr with parser);
    let mut function = parse_macro_input!(item as ItemFn);
    match expand(options, &mut function) {
        Ok(tokens) => tokens.into(),
        Err(error) => {
            // Keep the function so its own uses don't add errors of their own.
            let error = error.to_compile_error();
            quote!(#error #function).into()
        }
    }
}

#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    description: Option<LitStr>,
    safety: Option<LitStr>,
    scope: Option<LitStr>,
    categories: Vec<LitStr>,
    exclusive: Option<LitStr>,
    krate: Option<Path>,
}

impl Options {
    fn parse(&mut self, meta: syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
        let key = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
        match key.as_str() {
            "name" => self.name = Some(meta.value()?.parse()?),
            "description" => self.description = Some(meta.value()?.parse()?),
            "safety" => self.safety = Some(meta.value()?.parse()?),
            "scope" => self.scope = Some(meta.value()?.parse()?),
            "category" => self.categories.push(meta.value()?.parse()?),
            "exclusive" => self.exclusive = Some(meta.value()?.parse()?),
            "crate" => self.krate = Some(meta.value()?.parse()?),
            _ => {
                return Err(meta.error(
                    "unknown #[tool] option; expected one of: name, description, safety, category, scope, exclusive, crate",
                ));
            }
        }
        Ok(())
    }
}

/// A parameter of the tool function that becomes an argument field.
struct Param {
    ident: Ident,
    ty: Type,
    attrs: Vec<Attribute>,
}

enum ArgsShape {
    /// Plain parameters: the macro writes `Args`.
    Params(Vec<Param>),
    /// One parameter whose type is the arguments struct.
    Struct(Type),
}

fn expand(options: Options, function: &mut ItemFn) -> syn::Result<TokenStream2> {
    let mut errors: Vec<syn::Error> = Vec::new();
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

    let name = match &options.name {
        Some(lit) => {
            if let Err(reason) = check_name(&lit.value()) {
                errors.push(syn::Error::new(lit.span(), format!("invalid tool name {:?}: {reason}", lit.value())));
            }
            lit.value()
        }
        None => {
            let name = fn_ident.to_string().trim_start_matches("r#").to_owned();
            if let Err(reason) = check_name(&name) {
                errors.push(syn::Error::new(
                    fn_ident.span(),
                    format!("invalid tool name {name:?}: {reason}; set one with #[tool(name = \"...\")]"),
                ));
            }
            name
        }
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

    let safety = match &options.safety {
        None => quote!(#krate::SafetyLevel::Dangerous),
        Some(lit) => match lit.value().to_ascii_lowercase().as_str() {
            "safe" => quote!(#krate::SafetyLevel::Safe),
            "cautious" | "moderate" => quote!(#krate::SafetyLevel::Cautious),
            "dangerous" => quote!(#krate::SafetyLevel::Dangerous),
            _ => {
                errors.push(syn::Error::new(
                    lit.span(),
                    "safety must be \"safe\", \"cautious\" (or \"moderate\") or \"dangerous\"",
                ));
                quote!(#krate::SafetyLevel::Dangerous)
            }
        },
    };
    let scope = match &options.scope {
        None => quote!(#krate::Scope::Custom),
        Some(lit) => match lit.value().to_ascii_lowercase().as_str() {
            "core" => quote!(#krate::Scope::Core),
            "agent" => quote!(#krate::Scope::Agent),
            "user" => quote!(#krate::Scope::User),
            "custom" => quote!(#krate::Scope::Custom),
            _ => {
                errors.push(syn::Error::new(lit.span(), "scope must be \"core\", \"agent\", \"user\" or \"custom\""));
                quote!(#krate::Scope::Custom)
            }
        },
    };
    let categories = &options.categories;
    let exclusive = options.exclusive.iter();

    // Parameters: an optional leading CallContext, then the arguments.
    let mut takes_context = false;
    let mut params: Vec<Param> = Vec::new();
    for (index, input) in function.sig.inputs.iter_mut().enumerate() {
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
        if index == 0 && is_call_context(&typed.ty) {
            takes_context = true;
            continue;
        }
        if let Err(e) = check_owned(&typed.ty) {
            errors.push(e);
        }
        let ident = match &*typed.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => pat.ident.clone(),
            other => {
                errors.push(syn::Error::new(
                    other.span(),
                    "#[tool] parameters must be plain names (`x: T`), not patterns",
                ));
                continue;
            }
        };
        // Doc comments and serde/schemars attributes move to the generated field.
        let (moved, kept): (Vec<Attribute>, Vec<Attribute>) = typed
            .attrs
            .drain(..)
            .partition(|a| a.path().is_ident("doc") || a.path().is_ident("serde") || a.path().is_ident("schemars"));
        typed.attrs = kept;
        params.push(Param { ident, ty: (*typed.ty).clone(), attrs: moved });
    }

    let shape = if params.len() == 1 && is_struct_type(&params[0].ty) && params[0].attrs.is_empty() {
        ArgsShape::Struct(params.remove(0).ty)
    } else {
        ArgsShape::Params(params)
    };

    let (mod_vis, item_vis) = match visibilities(&function.vis) {
        Ok(v) => v,
        Err(e) => {
            errors.push(e);
            (quote!(), quote!(pub(super)))
        }
    };

    if let Some(first) = errors.into_iter().reduce(|mut a, b| {
        a.combine(b);
        a
    }) {
        return Err(first);
    }

    let is_async = function.sig.asyncness.is_some();
    let returns_result = returns_result(&function.sig.output);
    let mod_ident = format_ident!("{}_tool", fn_ident.to_string().trim_start_matches("r#"));
    let krate_str = quote!(#krate).to_string().replace(' ', "");
    let serde_crate = format!("{krate_str}::__private::serde");
    let schemars_crate = format!("{krate_str}::__private::schemars");
    let cx_arg = if takes_context { quote!(cx,) } else { quote!() };

    let (args_struct, args_ty, call_args) = match &shape {
        ArgsShape::Struct(ty) => (quote!(), quote!(#ty), quote!(#cx_arg args)),
        ArgsShape::Params(params) => {
            let fields = params.iter().map(|p| {
                let Param { ident, ty, attrs } = p;
                quote_spanned!(ty.span()=> #(#attrs)* #item_vis #ident: #ty,)
            });
            let idents: Vec<&Ident> = params.iter().map(|p| &p.ident).collect();
            let doc = format!(
                "Arguments of the `{name}` tool, one field per parameter of [`{fn_ident}`](super::{fn_ident})."
            );
            let args_struct = quote! {
                #[doc = #doc]
                #[derive(#krate::__private::serde::Deserialize, #krate::__private::schemars::JsonSchema)]
                #[serde(crate = #serde_crate)]
                #[schemars(crate = #schemars_crate)]
                #[allow(non_snake_case, missing_docs)]
                #item_vis struct Args {
                    #(#fields)*
                }
            };
            (args_struct, quote!(Args), quote!(#cx_arg #(args.#idents),*))
        }
    };

    let call = quote!(super::#fn_ident(#call_args));
    let call = if is_async { quote!(#call.await) } else { call };
    let wrapped = if returns_result { call } else { quote!(#krate::__private::ok(#call)) };
    let constructor = if is_async {
        quote! {
            #krate::ToolRegistration::from_async_with_context(
                NAME,
                |cx: #krate::CallContext, args: #args_ty| async move {
                    let _ = &cx;
                    #wrapped
                },
                declaration(),
            )
        }
    } else {
        quote! {
            #krate::ToolRegistration::from_sync_with_context(
                NAME,
                |cx: #krate::CallContext, args: #args_ty| {
                    let _ = &cx;
                    #wrapped
                },
                declaration(),
            )
        }
    };
    let mod_doc = format!("The `{name}` tool, generated by `#[tool]` from [`{fn_ident}`](super::{fn_ident}).");

    Ok(quote! {
        #function

        #[doc = #mod_doc]
        #mod_vis mod #mod_ident {
            #[allow(unused_imports)]
            use super::*;

            #args_struct

            /// The name the model calls this tool by.
            #item_vis const NAME: &str = #name;

            /// What the model is told the tool does.
            #item_vis const DESCRIPTION: &str = #description;

            /// The tool's declaration: name, description, input schema and classification.
            #item_vis fn declaration() -> #krate::ToolDeclaration {
                #krate::ToolDeclaration::for_args::<#args_ty>(NAME, DESCRIPTION)
                    .with_safety(#safety)
                    .with_scope(#scope)
                    #( .with_category(#categories) )*
                    #( .with_exclusive_key(#exclusive) )*
            }

            #[doc(inline)]
            #item_vis use super::#fn_ident as execute;

            /// The function and its declaration, ready for `FunctionRegistry::register`.
            #item_vis fn registration() -> #krate::ToolRegistration {
                #constructor
            }
        }
    })
}

/// The same rule `toolreg::validate_name` applies at run time.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a name must not be empty".into());
    }
    if name.len() > 64 {
        return Err(format!("a name may have at most 64 characters, this one has {}", name.len()));
    }
    match name.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-')) {
        Some(c) => Err(format!("character {c:?} is not allowed; use only A-Z, a-z, 0-9, `_` and `-`")),
        None => Ok(()),
    }
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

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        _ => None,
    }
}

fn is_call_context(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == "CallContext")
}

fn returns_result(output: &ReturnType) -> bool {
    match output {
        ReturnType::Default => false,
        ReturnType::Type(_, ty) => last_segment(ty).is_some_and(|s| s.ident == "Result"),
    }
}

/// Whether a lone parameter's type is an arguments struct rather than a
/// single scalar or collection argument.
fn is_struct_type(ty: &Type) -> bool {
    const NOT_STRUCTS: &[&str] = &[
        "bool",
        "char",
        "str",
        "String",
        "f32",
        "f64",
        "i8",
        "i16",
        "i32",
        "i64",
        "i128",
        "isize",
        "u8",
        "u16",
        "u32",
        "u64",
        "u128",
        "usize",
        "Value",
        "Map",
        "PathBuf",
        "Uuid",
        "Url",
        "Duration",
        "NaiveDate",
        "NaiveTime",
        "NaiveDateTime",
        "Decimal",
    ];
    match last_segment(ty) {
        Some(segment) => {
            matches!(segment.arguments, syn::PathArguments::None) && !NOT_STRUCTS.iter().any(|n| segment.ident == n)
        }
        None => false,
    }
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

/// Visibility of the generated module and of the items inside it, so that
/// `execute` re-exports the function no further than the function itself.
fn visibilities(vis: &Visibility) -> syn::Result<(TokenStream2, TokenStream2)> {
    match vis {
        Visibility::Inherited => Ok((quote!(), quote!(pub(super)))),
        Visibility::Public(_) => Ok((quote!(pub), quote!(pub))),
        Visibility::Restricted(r) if r.path.is_ident("crate") => Ok((quote!(pub(crate)), quote!(pub(crate)))),
        Visibility::Restricted(r) if r.path.is_ident("super") => Ok((quote!(pub(super)), quote!(pub(in super::super)))),
        Visibility::Restricted(r) if r.path.is_ident("self") => Ok((quote!(), quote!(pub(super)))),
        other => Err(syn::Error::new(
            other.span(),
            "#[tool] supports private, `pub`, `pub(crate)` and `pub(super)` functions",
        )),
    }
}
