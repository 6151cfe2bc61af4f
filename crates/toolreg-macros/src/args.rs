//! `#[derive(ToolArgs)]`: a struct the compiler may take as a tool's whole
//! argument object.
//!
//! Every provider wants a JSON object at the root of a tool's input schema.
//! Only here, where the type's definition is in view, can that be known at
//! compile time: the derive accepts a struct with named fields and refuses
//! enums, unions, tuple and unit structs, and container attributes that give
//! the struct another type's shape.

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Path};

/// Container attributes of serde and schemars under which a struct is
/// (de)serialised, or described, as something other than its fields.
const SHAPE_CHANGING: &[&str] = &["transparent", "from", "try_from", "into", "with", "schema_with", "remote"];

/// The crate path of `#[toolreg(crate = ..)]`, and the errors found in the
/// container attributes: ours, and serde's or schemars' that change the shape.
fn read_attrs(input: &DeriveInput) -> (Path, Vec<syn::Error>) {
    let mut krate: Path = syn::parse_quote!(::toolreg);
    let mut errors: Vec<syn::Error> = Vec::new();
    for attr in &input.attrs {
        if attr.path().is_ident("toolreg") {
            let parsed = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("crate") {
                    krate = meta.value()?.parse()?;
                    Ok(())
                } else {
                    Err(meta.error("unknown #[toolreg] option; expected `crate = path`"))
                }
            });
            if let Err(e) = parsed {
                errors.push(e);
            }
        } else if attr.path().is_ident("serde") || attr.path().is_ident("schemars") {
            // Read leniently: serde and schemars report their own attributes'
            // mistakes; this only looks for the keys that change the shape.
            let _ = attr.parse_nested_meta(|meta| {
                if let Some(key) = SHAPE_CHANGING.iter().find(|k| meta.path.is_ident(k)) {
                    errors.push(syn::Error::new(
                        meta.path.span(),
                        format!(
                            "`{key}` makes this struct's JSON something other than an object of its fields, \
                             so it cannot be a tool's whole argument object; take it as one argument \
                             (a parameter without `#[args]`) instead"
                        ),
                    ));
                }
                if meta.input.peek(syn::Token![=]) {
                    let _: syn::Expr = meta.value()?.parse()?;
                } else if meta.input.peek(syn::token::Paren) {
                    meta.parse_nested_meta(|inner| {
                        if inner.input.peek(syn::Token![=]) {
                            let _: syn::Expr = inner.value()?.parse()?;
                        }
                        Ok(())
                    })?;
                }
                Ok(())
            });
        }
    }

    (krate, errors)
}

pub(crate) fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let (krate, mut errors) = read_attrs(input);
    let ident = &input.ident;
    let not_object = "providers need a JSON object at the root of a tool's input schema";
    match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(_) => {}
            Fields::Unnamed(fields) => errors.push(syn::Error::new(
                fields.span(),
                format!(
                    "a tuple struct is a JSON array or its one field's value, not an object: {not_object}; \
                     give `{ident}` named fields"
                ),
            )),
            Fields::Unit => errors.push(syn::Error::new(
                ident.span(),
                format!("a unit struct is JSON `null`, not an object: {not_object}; give `{ident}` named fields"),
            )),
        },
        Data::Enum(data) => errors.push(syn::Error::new(
            data.enum_token.span(),
            format!(
                "an enum cannot be a tool's whole argument object: {not_object}, and an enum's schema is a \
                 string or a `oneOf` of variants; take `{ident}` as one argument instead (a parameter \
                 without `#[args]`, as in `fn f(choice: {ident})`), or as a field of a struct"
            ),
        )),
        Data::Union(data) => errors.push(syn::Error::new(
            data.union_token.span(),
            format!("a union cannot be a tool's argument object: {not_object}"),
        )),
    }
    if let Some(error) = errors.into_iter().reduce(|mut a, b| {
        a.combine(b);
        a
    }) {
        return Err(error);
    }

    let mut generics = input.generics.clone();
    // Generic structs are argument objects wherever serde and schemars can
    // take them; the bounds are theirs, not repeated here.
    generics.make_where_clause().predicates.push(syn::parse_quote!(
        Self: #krate::__private::serde::de::DeserializeOwned + #krate::__private::schemars::JsonSchema
    ));
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    Ok(quote! {
        const _: () = {
            #[automatically_derived]
            impl #impl_generics #krate::__private::ArgsObject for #ident #ty_generics #where_clause {}
        };
    })
}
