//! The code `#[tool]` writes for one tool: the arguments struct, the
//! constants, `declaration()`, and the registration.
//!
//! Everything but the registration goes in a module of the tool's own (for
//! a free function, the public `<fn>_tool`; for a method, a hidden one
//! beside the impl block), and the registration is built either in that
//! module (a free function) or in the impl block (a method, which needs
//! `Self`): [`registration`] is written for both, and [`construct`] is the
//! one place generated code names a `ToolRegistration` constructor.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Visibility};

use super::Tool;
use super::params::{Input, Param};

/// Visibility of a tool's module, of the items inside it, and of the items
/// of the module nested in it for the arguments struct.
pub(crate) struct Vis {
    pub(crate) module: TokenStream,
    pub(crate) item: TokenStream,
    pub(crate) nested: TokenStream,
}

impl Vis {
    /// A private module: its items are visible beside it.
    pub(crate) fn private() -> Vis {
        Vis { module: quote!(), item: quote!(pub(super)), nested: quote!(pub(in super::super)) }
    }

    /// For a free function, so that `execute` re-exports the function no
    /// further than the function itself.
    pub(crate) fn of(vis: &Visibility) -> syn::Result<Vis> {
        let new = |module, item, nested| Ok(Vis { module, item, nested });
        match vis {
            Visibility::Inherited => Ok(Vis::private()),
            Visibility::Public(_) => new(quote!(pub), quote!(pub), quote!(pub)),
            Visibility::Restricted(r) if r.path.is_ident("crate") => {
                new(quote!(pub(crate)), quote!(pub(crate)), quote!(pub(crate)))
            }
            Visibility::Restricted(r) if r.path.is_ident("super") => {
                new(quote!(pub(super)), quote!(pub(in super::super)), quote!(pub(in super::super::super)))
            }
            Visibility::Restricted(r) if r.path.is_ident("self") => Ok(Vis::private()),
            other => Err(syn::Error::new(
                other.span(),
                "#[tool] supports private, `pub`, `pub(crate)` and `pub(super)` functions",
            )),
        }
    }
}

/// What the registration calls: a free function (`super::f`, from its
/// module), or a method on the state `state: Arc<Self>` the registration
/// holds.
pub(crate) enum Target<'a> {
    Function(&'a Ident),
    Method(&'a Ident),
}

/// Everything in the tool's module but the registration: `Args` (or the
/// `#[args]` check), `NAME`, `DESCRIPTION`, the checked constants,
/// `declaration()`, and for a lone parameter the helpers that pick a form.
/// `source` names the function in docs.
pub(crate) fn module_items(tool: &Tool, vis: &Vis, source: &str) -> TokenStream {
    let krate = &tool.krate;
    let item_vis = &vis.item;
    let args = arguments(tool, vis, source);
    let description = &tool.description;
    let checked = tool.options.checked_constants(krate, &tool.name, tool.name_span);
    let args_ty = args_type(tool, &quote!());
    let declared = match tool.params.lone() {
        None => quote!(#krate::ToolDeclaration::for_args::<#args_ty>(NAME, DESCRIPTION)),
        Some(_) => quote! {
            if __whole_object() {
                #krate::ToolDeclaration::for_args::<__Lone>(NAME, DESCRIPTION)
            } else {
                #krate::ToolDeclaration::for_args::<Args>(NAME, DESCRIPTION)
            }
        },
    };
    let declaration = tool.options.classify(krate, declared);
    let whole_object = tool.params.lone().map(|_| {
        quote! {
            /// Whether the lone parameter is the whole argument object:
            /// its type's schema is an object with properties.
            #[doc(hidden)]
            #item_vis fn __whole_object() -> bool {
                #krate::__private::is_argument_object::<__Lone>()
            }
        }
    });
    quote! {
        #args

        /// The name the model calls this tool by.
        #item_vis const NAME: &str = NAME_CHECKED;

        /// What the model is told the tool does.
        #item_vis const DESCRIPTION: &str = #description;

        #checked

        /// The tool's declaration: name, description, input schema and classification.
        #item_vis fn declaration() -> #krate::ToolDeclaration {
            #declaration
        }

        #whole_object
    }
}

/// The type the registration deserialises the arguments into, named from
/// where the registration is built (`at` is the path to the tool's module).
fn args_type(tool: &Tool, at: &TokenStream) -> TokenStream {
    match &tool.params.whole {
        Some(ty) => quote!(#ty),
        None => quote!(#at Args),
    }
}

/// The arguments struct `Args`, or for an `#[args]` parameter the check
/// that its type is an argument object.
fn arguments(tool: &Tool, vis: &Vis, source: &str) -> TokenStream {
    let krate = &tool.krate;
    if let Some(ty) = &tool.params.whole {
        // The bound is checked where the type is written, once.
        return quote_spanned! {ty.span()=>
            const _: fn() = || {
                fn args_object<T: #krate::__private::ArgsObject>() {}
                args_object::<#ty>();
            };
        };
    }
    let (item_vis, nested_vis) = (&vis.item, &vis.nested);
    let params = &tool.params.args;
    let krate_str = quote!(#krate).to_string().replace(' ', "");
    let serde_crate = format!("{krate_str}::__private::serde");
    let schemars_crate = format!("{krate_str}::__private::schemars");
    let name = &tool.name;
    let doc = match tool.params.lone() {
        None => format!("Arguments of the `{name}` tool, one field per parameter of {source}."),
        // Both forms are built; the schema of the parameter's type picks one.
        Some(_) => format!(
            "Arguments of the `{name}` tool when its one parameter is one named argument: used only if \
             the parameter's type is not itself an argument object (a struct with named fields), which \
             is then the whole argument object (see `toolreg::schema::is_argument_object`)."
        ),
    };
    // Each field's type goes through `ToolArgument`, spanned on the
    // parameter's type, which is how the `CallContext` mistake gets its own
    // message.
    let fields = params.iter().map(|Param { ident, ty, attrs, .. }| {
        let ty = quote_spanned!(ty.span()=> <#ty as #krate::__private::ToolArgument>::Type);
        quote!(#(#attrs)* #nested_vis #ident: #ty,)
    });
    let checks = params.iter().map(
        |Param { ty, .. }| quote_spanned!(ty.span()=> const _: () = <#ty as #krate::__private::ToolArgument>::CHECK;),
    );
    let types = params.iter().map(|p| &p.ty);
    let values = params
        .iter()
        .map(|Param { ident, ty, .. }| quote!(<#ty as #krate::__private::ToolArgument>::into_param(self.#ident)));
    let (lone_items, lone_uses) = lone_helpers(tool, vis);
    // The struct lives in a module of its own, whose only item is the
    // struct under a name no user type is likely to have: the parameter
    // types, resolved there through `use super::super::*`, then mean what
    // they mean beside the function, even a user type called `Args`.
    quote! {
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
                #nested_vis fn into_params(self) -> (#(#types,)*) {
                    (#(#values,)*)
                }
            }

            #lone_items
        }

        #[doc(inline)]
        #item_vis use __arguments::__ToolArguments as Args;

        #lone_uses
    }
}

/// For a lone parameter, its type and the function that makes the
/// parameter of the whole argument object, in the arguments module where
/// the type means what it means beside the function; and their re-exports
/// in the tool's module.
fn lone_helpers(tool: &Tool, vis: &Vis) -> (Option<TokenStream>, Option<TokenStream>) {
    let krate = &tool.krate;
    let (item_vis, nested_vis) = (&vis.item, &vis.nested);
    let lone_items = tool.params.lone().map(|ty| {
        quote! {
            /// The lone parameter's type, as the arguments struct holds it.
            #nested_vis type __Lone = <#ty as #krate::__private::ToolArgument>::Type;

            /// The parameter's value from the whole argument object.
            #[inline]
            #nested_vis fn lone_params(value: __Lone) -> (#ty,) {
                (<#ty as #krate::__private::ToolArgument>::into_param(value),)
            }
        }
    });
    let lone_uses = tool.params.lone().map(|_| {
        quote! {
            #[doc(hidden)]
            #item_vis use __arguments::{__Lone, lone_params as __lone_params};
        }
    });
    (lone_items, lone_uses)
}

/// The expression that builds the tool's `ToolRegistration`, written where
/// `at` (empty, or `module::`) reaches the tool's module. For a lone
/// parameter, the type's schema picks the form once, here.
pub(crate) fn registration(tool: &Tool, at: &TokenStream, target: &Target<'_>) -> TokenStream {
    let args_ty = args_type(tool, at);
    let unpack = if tool.params.whole.is_none() { quote!(let params = args.into_params();) } else { quote!() };
    let named = construct(tool, at, target, &args_ty, &unpack);
    match tool.params.lone() {
        None => named,
        Some(_) => {
            let lone_ty = quote!(#at __Lone);
            let as_whole = construct(tool, at, target, &lone_ty, &quote!(let params = #at __lone_params(args);));
            quote!(if #at __whole_object() { #as_whole } else { #named })
        }
    }
}

/// The one place the generated code builds a `ToolRegistration`: a closure
/// over the call's context and the arguments of type `args_ty`, unpacked
/// into the parameters by `unpack`, with the name and declaration from the
/// tool's module.
fn construct(
    tool: &Tool,
    at: &TokenStream,
    target: &Target<'_>,
    args_ty: &TokenStream,
    unpack: &TokenStream,
) -> TokenStream {
    let krate = &tool.krate;
    let call = call(tool, target);
    let body = quote! {
        #[allow(unused_imports)]
        use #krate::__private::{IsPlain as _, IsResult as _};
        let _ = &cx;
        #unpack
        let out = #call;
        (&#krate::__private::ReturnKind::of(&out)).kind().wrap(out)
    };
    let declaration = quote!(#at declaration());
    if tool.is_async {
        // A method's future owns a handle on the state, so it may outlive the call to the closure.
        let state = matches!(target, Target::Method(_)).then(|| quote!(let state = ::std::sync::Arc::clone(&state);));
        quote! {
            #krate::ToolRegistration::new(
                #declaration,
                move |cx: #krate::CallContext, args: #args_ty| { #state async move { #body } },
            )
        }
    } else {
        quote! {
            #krate::ToolRegistration::new(#declaration, move |cx: #krate::CallContext, args: #args_ty| { #body })
        }
    }
}

/// The call of the user's function with its parameters in order.
fn call(tool: &Tool, target: &Target<'_>) -> TokenStream {
    let krate = &tool.krate;
    let mut position = 0usize;
    let args = tool.params.inputs.iter().map(|input| match input {
        Input::Context(ty) => quote_spanned! {ty.span()=>
            <#ty as #krate::__private::FromCallContext<'_>>::from_call_context(&cx)
        },
        Input::Args => quote!(args),
        Input::Arg => {
            let index = syn::Index::from(position);
            position += 1;
            quote!(params.#index)
        }
    });
    let args: Vec<TokenStream> = args.collect();
    let call = match target {
        Target::Function(ident) => quote!(super::#ident(#(#args),*)),
        Target::Method(ident) => quote!(Self::#ident(&*state, #(#args),*)),
    };
    if tool.is_async { quote!(#call.await) } else { call }
}
