//! Cleaning a schema for every provider: `$schema` and the root `title`
//! dropped, local `$ref`s inlined unless they recurse.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::bounds::{local_ref_name, measure};

/// Make a schema readable by every provider, in place: drop `$schema` and the
/// root `title`, inline local `$ref`s that do not recurse, and drop `$defs`
/// nothing refers to any more. A schema over the bounds of [`check_bounds`](super::check_bounds)
/// keeps its references (and is refused at registration).
pub fn clean(schema: &mut Value) {
    let within_bounds = measure(schema).is_ok();
    let Value::Object(root) = schema else { return };
    root.remove("$schema");
    root.remove("title");
    if !within_bounds {
        return;
    }
    let defs = take_defs(root);
    if defs.is_empty() {
        return;
    }
    let mut kept = BTreeSet::new();
    let mut stack = Vec::new();
    inline_refs(schema, &defs, &mut stack, &mut kept);
    if kept.is_empty() {
        return;
    }
    // Definitions that recurse stay, themselves inlined but for the recursive refs.
    let mut out = Map::new();
    let mut pending: Vec<String> = kept.iter().cloned().collect();
    while let Some(name) = pending.pop() {
        if out.contains_key(&name) {
            continue;
        }
        let Some(def) = defs.get(&name) else { continue };
        let mut def = def.clone();
        let mut stack = vec![name.clone()];
        let mut more = BTreeSet::new();
        inline_refs(&mut def, &defs, &mut stack, &mut more);
        out.insert(name, def);
        pending.extend(more.into_iter().filter(|n| !out.contains_key(n)));
    }
    if let Value::Object(root) = schema {
        root.insert("$defs".into(), Value::Object(out));
    }
}

fn take_defs(root: &mut Map<String, Value>) -> Map<String, Value> {
    let mut defs = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(d)) = root.remove(key) {
            defs.extend(d);
        }
    }
    defs
}

/// Replace `{"$ref": "#/$defs/X", ...siblings}` by X's schema (siblings kept,
/// `description` of the ref winning), unless X is already being inlined, in
/// which case the reference is recursive: keep it and note X in `kept`.
fn inline_refs(value: &mut Value, defs: &Map<String, Value>, stack: &mut Vec<String>, kept: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            let target = map.get("$ref").and_then(Value::as_str).and_then(local_ref_name).map(str::to_owned);
            if let Some(name) = target {
                if stack.contains(&name) {
                    // Normalise `#/definitions/X` to `#/$defs/X`, where the def will live.
                    map.insert("$ref".into(), Value::String(format!("#/$defs/{name}")));
                    kept.insert(name);
                    return;
                }
                if let Some(Value::Object(def)) = defs.get(&name) {
                    map.remove("$ref");
                    let mut inlined = def.clone();
                    for (k, v) in std::mem::take(map) {
                        inlined.insert(k, v);
                    }
                    *map = inlined;
                    stack.push(name);
                    for v in map.values_mut() {
                        inline_refs(v, defs, stack, kept);
                    }
                    stack.pop();
                    return;
                }
            }
            for v in map.values_mut() {
                inline_refs(v, defs, stack, kept);
            }
        }
        Value::Array(items) => {
            for v in items {
                inline_refs(v, defs, stack, kept);
            }
        }
        _ => {}
    }
}
