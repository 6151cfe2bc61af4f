//! How big a schema would grow once its local `$ref`s are inlined, measured
//! without inlining them: the bound that keeps a "`$ref` bomb" out.

use std::collections::HashMap;

use serde_json::Value;

/// Most JSON nodes a schema may have once its local `$ref`s are inlined.
pub const MAX_SCHEMA_NODES: usize = 50_000;
/// Deepest nesting a schema may have once its local `$ref`s are inlined.
pub const MAX_SCHEMA_DEPTH: usize = 128;

/// Check that a schema stays within [`MAX_SCHEMA_NODES`] and
/// [`MAX_SCHEMA_DEPTH`] once its local `$ref`s are inlined (recursive
/// references count once). The work is bounded by the size of the schema
/// as written, whatever it would expand to, and uses no recursion.
///
/// ```
/// use serde_json::json;
/// // Each definition refers twice to the next: 2^40 copies once inlined.
/// let mut defs = serde_json::Map::new();
/// for i in 0..40 {
///     let next = json!({"$ref": format!("#/$defs/D{}", i + 1)});
///     defs.insert(format!("D{i}"), json!({"type": "object", "properties": {"a": next, "b": next}}));
/// }
/// defs.insert("D40".into(), json!({"type": "string"}));
/// let bomb = json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/D0"}}, "$defs": defs});
/// let err = toolreg::schema::check_bounds(&bomb).unwrap_err();
/// assert!(err.contains("more than 50000 nodes"), "{err}");
/// ```
pub fn check_bounds(schema: &Value) -> Result<(), String> {
    measure(schema).map(|_| ()).map_err(|e| e.to_string())
}

/// A bound [`measure`] found exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exceeded {
    Nodes(usize),
    Depth(usize),
}

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exceeded::Nodes(n) => write!(
                f,
                "the schema has more than {MAX_SCHEMA_NODES} nodes once its `$ref`s are inlined (at least {n}); \
                 refer to fewer copies of its definitions"
            ),
            Exceeded::Depth(d) => write!(
                f,
                "the schema nests deeper than {MAX_SCHEMA_DEPTH} levels once its `$ref`s are inlined (at least {d})"
            ),
        }
    }
}

/// The definition a local reference (`#/$defs/X`, `#/definitions/X`)
/// names; `None` for any other reference.
pub(super) fn local_ref_name(reference: &str) -> Option<&str> {
    reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))
        .filter(|name| !name.contains('/'))
}

/// What one schema (a definition, or the root without its definitions)
/// holds as written: its nodes, its depth, and its local references with
/// the depth at which each sits.
struct Local<'a> {
    nodes: usize,
    depth: usize,
    refs: Vec<(&'a str, usize)>,
}

fn local<'a>(schema: &'a Value, skip_defs: bool) -> Local<'a> {
    let mut out = Local { nodes: 0, depth: 0, refs: Vec::new() };
    let mut stack: Vec<(&'a Value, usize, bool)> = vec![(schema, 1, skip_defs)];
    while let Some((value, depth, is_root)) = stack.pop() {
        out.nodes += 1;
        out.depth = out.depth.max(depth);
        match value {
            Value::Object(map) => {
                if let Some(name) = map.get("$ref").and_then(Value::as_str).and_then(local_ref_name) {
                    out.refs.push((name, depth));
                }
                for (key, child) in map {
                    if is_root && (key == "$defs" || key == "definitions") {
                        continue;
                    }
                    stack.push((child, depth + 1, false));
                }
            }
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1, false))),
            _ => {}
        }
    }
    out
}

/// Nodes and depth of a schema once its references are inlined, or the
/// first bound it exceeds. Each definition is expanded once (memoised), in
/// a depth-first walk over definitions with an explicit stack.
pub(crate) fn measure(schema: &Value) -> Result<(usize, usize), Exceeded> {
    let mut defs: HashMap<&str, &Value> = HashMap::new();
    if let Value::Object(root) = schema {
        for key in ["definitions", "$defs"] {
            if let Some(Value::Object(d)) = root.get(key) {
                defs.extend(d.iter().map(|(k, v)| (k.as_str(), v)));
            }
        }
    }
    let check = |nodes: usize, depth: usize| {
        if nodes > MAX_SCHEMA_NODES {
            Err(Exceeded::Nodes(nodes))
        } else if depth > MAX_SCHEMA_DEPTH {
            Err(Exceeded::Depth(depth))
        } else {
            Ok(())
        }
    };
    let locals: HashMap<&str, Local<'_>> = defs.iter().map(|(name, def)| (*name, local(def, false))).collect();
    // Expanded (nodes, depth) per definition; `None` while being expanded
    // (a reference to it then is recursive and counts as one node).
    let mut done: HashMap<&str, Option<(usize, usize)>> = HashMap::new();
    let root = local(schema, true);
    // Frames: (definition or None for the root, next reference, nodes, depth).
    let mut frames: Vec<(Option<&str>, usize, usize, usize)> = vec![(None, 0, root.nodes, root.depth)];
    while let Some(frame) = frames.last_mut() {
        let (name, next, nodes, depth) = *frame;
        let refs = match name {
            None => &root.refs,
            Some(n) => &locals[n].refs,
        };
        if let Some(&(target, at)) = refs.get(next) {
            frame.1 += 1;
            if !locals.contains_key(target) {
                continue;
            }
            match done.get(target) {
                Some(Some((n, d))) => {
                    frame.2 = nodes.saturating_add(*n);
                    frame.3 = depth.max(at.saturating_add(*d));
                    check(frame.2, frame.3)?;
                }
                Some(None) => {}
                None => {
                    done.insert(target, None);
                    let l = &locals[target];
                    frames.push((Some(target), 0, l.nodes, l.depth));
                }
            }
            continue;
        }
        // Every reference of this frame is counted: hand its size to the parent.
        frames.pop();
        let Some(name) = name else { return check(nodes, depth).map(|()| (nodes, depth)) };
        done.insert(name, Some((nodes, depth)));
        if let Some(parent) = frames.last_mut() {
            let parent_refs = match parent.0 {
                None => &root.refs,
                Some(n) => &locals[n].refs,
            };
            let at = parent_refs[parent.1 - 1].1;
            parent.2 = parent.2.saturating_add(nodes);
            parent.3 = parent.3.max(at.saturating_add(depth));
            check(parent.2, parent.3)?;
        }
    }
    Ok((root.nodes, root.depth))
}
