//! The keys of `#[tool(..)]`, and what they make of the tool's name,
//! description and classification.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{Attribute, Ident, LitBool, LitStr, Path};

use super::Errors;

/// `#[tool(..)]` as written.
#[derive(Default)]
pub(crate) struct Options {
    pub(crate) name: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) safety: Option<LitStr>,
    pub(crate) scope: Option<LitStr>,
    pub(crate) categories: Vec<LitStr>,
    pub(crate) exclusive: Option<LitStr>,
    pub(crate) title: Option<LitStr>,
    pub(crate) idempotent: Option<LitBool>,
    pub(crate) open_world: Option<LitBool>,
    /// `example = r#"{..}"#`, each checked to be a JSON object here.
    pub(crate) examples: Vec<LitStr>,
    pub(crate) krate: Option<Path>,
}

impl Options {
    /// Read one `key = value` of `#[tool(..)]`.
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
            "example" => {
                let lit: LitStr = meta.value()?.parse()?;
                // Whether it fits the schema is checked when the tool is
                // registered; that it is a JSON object can be checked now.
                match serde_json::from_str::<serde_json::Value>(&lit.value()) {
                    Ok(serde_json::Value::Object(_)) => self.examples.push(lit),
                    Ok(_) => return Err(syn::Error::new(lit.span(), "an example is a JSON object of arguments")),
                    Err(e) => return Err(syn::Error::new(lit.span(), format!("an example must be JSON: {e}"))),
                }
            }
            "crate" => self.krate = Some(meta.value()?.parse()?),
            _ => {
                return Err(meta.error(
                    "unknown #[tool] option; expected one of: name, description, safety, category, scope, exclusive, title, idempotent, open_world, example, crate",
                ));
            }
        }
        Ok(())
    }

    /// The tool's name, and the span an error about it points at: the
    /// `name` option, or the function's name without `r#`. Only chosen here;
    /// the core's rule checks it in a constant of the generated code.
    pub(crate) fn name(&self, ident: &Ident) -> (String, Span) {
        match &self.name {
            Some(lit) => (lit.value(), lit.span()),
            None => (ident.to_string().trim_start_matches("r#").to_owned(), ident.span()),
        }
    }

    /// The description for the model: the `description` option, else the
    /// doc comment; a tool must have one.
    pub(crate) fn description(&self, attrs: &[Attribute], ident: &Ident, errors: &mut Errors) -> String {
        match &self.description {
            Some(lit) if lit.value().trim().is_empty() => {
                errors.push(syn::Error::new(lit.span(), "the tool description must not be empty"));
                String::new()
            }
            Some(lit) => lit.value(),
            None => doc_text(attrs).unwrap_or_else(|| {
                errors.push(syn::Error::new(
                    ident.span(),
                    "a tool needs a description for the model: add a doc comment or #[tool(description = \"...\")]",
                ));
                String::new()
            }),
        }
    }

    /// The declaration's classification, appended to `declared`: safety and
    /// scope go through the constants `SAFETY` and `SCOPE` the generated
    /// code defines (see [`Options::checked_constants`]).
    pub(crate) fn classify(&self, krate: &Path, declared: TokenStream) -> TokenStream {
        let categories = &self.categories;
        let exclusive = self.exclusive.iter();
        let title = self.title.iter();
        let idempotent = self.idempotent.iter();
        let open_world = self.open_world.iter();
        let examples = &self.examples;
        quote! {
            (#declared)
                .with_safety(SAFETY)
                .with_scope(SCOPE)
                #( .with_category(#categories) )*
                #( .with_exclusive_key(#exclusive) )*
                #( .with_title(#title) )*
                #( .with_idempotent(#idempotent) )*
                #( .with_open_world(#open_world) )*
                #( .with_example(#krate::__private::example(#examples)) )*
        }
    }

    /// The constants `NAME_CHECKED`, `SAFETY` and `SCOPE`: the core's rules
    /// for names, safety levels and scopes, applied at compile time, so a bad
    /// value stops the build with the rule's message, pointing at the option.
    pub(crate) fn checked_constants(&self, krate: &Path, name: &str, name_span: Span) -> TokenStream {
        let safety = match &self.safety {
            None => quote!(#krate::SafetyLevel::Dangerous),
            Some(lit) => quote_spanned!(lit.span()=> #krate::__private::safety(#lit)),
        };
        let scope = match &self.scope {
            None => quote!(#krate::Scope::Custom),
            Some(lit) => quote_spanned!(lit.span()=> #krate::__private::scope(#lit)),
        };
        let name_checked = quote_spanned!(name_span=> #krate::__private::tool_name(#name));
        quote! {
            const NAME_CHECKED: &str = #name_checked;
            const SAFETY: #krate::SafetyLevel = #safety;
            const SCOPE: #krate::Scope = #scope;
            const _: () = {
                let _ = NAME_CHECKED;
                let _ = SAFETY;
                let _ = SCOPE;
            };
        }
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
