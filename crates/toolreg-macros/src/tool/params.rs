//! The parameter rule: which parameter of a tool function is what.
//!
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
//!   (a type that derives `ToolArgs`); no parameter is then a JSON argument;
//! - a method's `&self` is the tool's state (see `crate::tools`); no other
//!   receiver is accepted, and a free function takes none.

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, Pat, Receiver, Signature, Type};

use super::Errors;

/// A parameter of the tool function that is one JSON argument.
pub(crate) struct Param {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    /// Doc comment, `#[serde]` and `#[schemars]`, moved to the field.
    pub(crate) attrs: Vec<Attribute>,
    /// Marked `#[arg]`: one named argument even when it is the only one.
    pub(crate) marked: bool,
}

/// What one parameter of the tool function is passed, in order.
pub(crate) enum Input {
    /// `#[context] cx: T`: taken from the call context.
    Context(Box<Type>),
    /// `#[args] x: T`: the whole argument object.
    Args,
    /// `x: T`: the argument named `x`, the next of [`Params::args`].
    Arg,
}

/// Where the function stands, which decides what its receiver may be.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// A free function: no receiver.
    Free,
    /// A method of a `#[tools]` impl block: `&self` first.
    Method,
}

/// The parameters of a tool function, sorted by the rule.
pub(crate) struct Params {
    /// Every parameter but the receiver, in order.
    pub(crate) inputs: Vec<Input>,
    /// The JSON arguments, in order.
    pub(crate) args: Vec<Param>,
    /// The type of the `#[args]` parameter, if there is one.
    pub(crate) whole: Option<Type>,
}

/// A parameter attribute: `#[context]`, `#[args]` or `#[arg]`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Marker {
    Context,
    Args,
    Arg,
}

impl Params {
    /// Sort the parameters of `sig`, taking the attributes `#[tool]` gives
    /// a meaning to off them.
    pub(crate) fn collect(sig: &mut Signature, place: Place, errors: &mut Errors) -> Params {
        let mut params = Params { inputs: Vec::new(), args: Vec::new(), whole: None };
        let mut receiver_seen = false;
        let sig_span = sig.paren_token.span.join();
        for input in sig.inputs.iter_mut() {
            let typed = match input {
                FnArg::Receiver(receiver) => {
                    check_receiver(receiver, place, errors);
                    receiver_seen = true;
                    continue;
                }
                FnArg::Typed(typed) => typed,
            };
            let marker = take_marker(&mut typed.attrs, errors);
            if matches!(marker, Some((Marker::Context | Marker::Args, _)))
                && let Some(attr) = typed.attrs.iter().find(|a| is_argument_attr(a))
            {
                errors.push(syn::Error::new(
                    attr.span(),
                    "doc comments, `#[serde]` and `#[schemars]` describe one JSON argument, \
                     which a `#[context]` or `#[args]` parameter is not",
                ));
            }
            if place == Place::Method && !matches!(marker, Some((Marker::Context, _))) {
                refuse_self_type(&typed.ty, errors);
            }
            match marker {
                Some((Marker::Context, _)) => params.inputs.push(Input::Context(typed.ty.clone())),
                Some((Marker::Args, span)) => {
                    if let Err(e) = check_owned(&typed.ty) {
                        errors.push(e);
                    }
                    if params.whole.is_some() {
                        errors.push(syn::Error::new(span, "a tool takes at most one `#[args]` parameter"));
                    }
                    params.whole = Some((*typed.ty).clone());
                    params.inputs.push(Input::Args);
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
                    let (moved, kept): (Vec<Attribute>, Vec<Attribute>) =
                        typed.attrs.drain(..).partition(is_argument_attr);
                    typed.attrs = kept;
                    params.inputs.push(Input::Arg);
                    params.args.push(Param { ident, ty: (*typed.ty).clone(), attrs: moved, marked: marker.is_some() });
                }
            }
        }
        if place == Place::Method && !receiver_seen {
            errors.push(syn::Error::new(
                sig_span,
                "a #[tool] method takes `&self`, the state its tool holds; a tool without state is a free \
                 function with #[tool]",
            ));
        }
        params.refuse_args_beside_whole(errors);
        params
    }

    /// The lone parameter without any attribute, whose type's schema decides
    /// whether it is the whole argument object (see the module docs).
    pub(crate) fn lone(&self) -> Option<&Type> {
        match (&self.whole, self.args.as_slice()) {
            (None, [only]) if !only.marked && only.attrs.is_empty() => Some(&only.ty),
            _ => None,
        }
    }

    fn refuse_args_beside_whole(&self, errors: &mut Errors) {
        if self.whole.is_none() {
            return;
        }
        for param in &self.args {
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
}

/// A free function takes no receiver; a method takes `&self` (the state is
/// shared by concurrent calls, so never `&mut self`, and kept by the
/// registration, so never `self`).
fn check_receiver(receiver: &Receiver, place: Place, errors: &mut Errors) {
    let message = match place {
        Place::Free => {
            "#[tool] goes on free functions, or on methods of an impl block marked #[tools]: \
             put #[tools] on the impl block"
        }
        Place::Method if receiver.reference.is_some() && receiver.mutability.is_none() => return,
        Place::Method if receiver.mutability.is_some() && receiver.reference.is_some() => {
            "a #[tool] method takes `&self`, not `&mut self`: calls may run at the same time, so keep what \
             changes behind a lock (a `Mutex` or an atomic) in the state"
        }
        Place::Method => {
            "a #[tool] method takes `&self`: its registration keeps the state and lends it to every call, \
             so it cannot take `self` by value or in another type"
        }
    };
    errors.push(syn::Error::new(receiver.span(), message));
}

/// A method's JSON arguments are described outside the impl block, where
/// `Self` means nothing.
fn refuse_self_type(ty: &Type, errors: &mut Errors) {
    fn find_self(tokens: TokenStream) -> Option<Span> {
        tokens.into_iter().find_map(|tree| match tree {
            TokenTree::Ident(ident) if ident == "Self" => Some(ident.span()),
            TokenTree::Group(group) => find_self(group.stream()),
            _ => None,
        })
    }
    if let Some(span) = find_self(quote::quote!(#ty)) {
        errors.push(syn::Error::new(span, "write the type's name instead of `Self` in a tool argument's type"));
    }
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
pub(crate) fn strip_parameter_attrs(sig: &mut Signature) {
    for input in sig.inputs.iter_mut() {
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
