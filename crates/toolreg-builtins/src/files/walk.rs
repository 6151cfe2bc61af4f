//! `list_files` and `search_files`: a walk through directory handles.
//!
//! The walk never touches a path string outside the root: each directory is
//! opened from its parent's handle by a single name, symbolic links are
//! listed but never followed, and `.gitignore` / `.ignore` files are read
//! through the same handles and matched with the `ignore` crate's gitignore
//! rules. The walk is an explicit stack, bounded in depth and in entries.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_std::fs::Dir;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::overrides::{Override, OverrideBuilder};
use regex::{Regex, RegexBuilder};

use super::path::{RelPath, display};
use super::read::binary_kind;
use super::{FileError, FileTools, ListArgs, ListResult, SearchArgs, SearchResult};

/// Largest ignore file read (1 MiB).
const MAX_IGNORE_FILE: u64 = 1024 * 1024;
/// Most ignore patterns one listing or search applies, over every ignore
/// file it reads. Each pattern is compiled to a regular expression, at a
/// cost that grows with its wildcards, so a file of many thousands of
/// patterns would make a walk slow without bound (seconds per file);
/// patterns past this budget, or past [`MAX_IGNORE_WILDCARDS`], are not
/// applied (and counted in the result), which lists more files, never fewer.
pub(crate) const MAX_IGNORE_PATTERNS: usize = 4_000;
/// Most wildcards (`*`, `?`, `[`) in the ignore patterns one walk applies.
pub(crate) const MAX_IGNORE_WILDCARDS: usize = 4_000;
/// Longest ignore pattern applied, in bytes; longer ones are skipped the same way.
pub(crate) const MAX_IGNORE_PATTERN_BYTES: usize = 512;
/// Longest matching line shown in a search result, in bytes.
const MAX_MATCH_TEXT: usize = 300;
/// Largest automaton a `search_files` pattern may compile to, in bytes.
/// Matching costs up to the automaton's size per byte searched when the
/// lazy DFA gives up, so this bounds the work per byte as well as memory:
/// `(?:a?){3000}a{3000}` (400 KB) took seconds per file and is refused now.
/// Everyday patterns compile to a few kilobytes, and one Unicode `\w` to
/// about 50 KB; a counted repetition of a Unicode class (`\w{1,40}`, 2 MB)
/// is refused too, and its ASCII form (`[0-9A-Za-z_]{1,40}`) is not.
pub(crate) const REGEX_SIZE_LIMIT: usize = 256 * 1024;
/// Most cache the lazy DFA of one search keeps, in bytes.
const REGEX_DFA_SIZE_LIMIT: usize = 2 * 1024 * 1024;
/// Deepest nesting of groups and repetitions in a pattern.
const REGEX_NEST_LIMIT: u32 = 64;

/// A file found by a walk: its path from the root and from the walk's start.
struct Found {
    from_root: PathBuf,
    is_symlink: bool,
}

/// The ignore rules of one directory, with that directory's path from the
/// walk's start, and those of the directories above it: shared, not copied,
/// by every directory below.
struct Rules {
    parent: Option<Arc<Rules>>,
    dir: PathBuf,
    gitignore: Gitignore,
}

struct Frame {
    dir: Dir,
    /// Path from the walk's start.
    rel: PathBuf,
    depth: usize,
    rules: Option<Arc<Rules>>,
}

impl FileTools {
    /// List files recursively: see [`ListArgs`].
    pub fn list(&self, args: &ListArgs) -> Result<ListResult, FileError> {
        let cap = args.limit.unwrap_or(usize::MAX).clamp(1, self.options().max_list_results);
        let start = self.resolve(args.path.as_deref().unwrap_or(""), true)?;
        let pattern = compile_glob(args.pattern.as_deref())?;
        let mut files = Vec::new();
        let mut truncated = false;
        let ignore_patterns_skipped = self.walk(&start, args.include_hidden, pattern.as_ref(), &mut |found| {
            if files.len() == cap {
                truncated = true;
                return false;
            }
            let mut shown = display(&found.from_root);
            if found.is_symlink {
                shown.push_str(" (symlink)");
            }
            files.push(shown);
            true
        })?;
        Ok(ListResult { files, truncated, ignore_patterns_skipped })
    }

    /// Search file contents: see [`SearchArgs`].
    pub fn search(&self, args: &SearchArgs) -> Result<SearchResult, FileError> {
        let cap = args.limit.unwrap_or(usize::MAX).clamp(1, self.options().max_search_results);
        let regex = RegexBuilder::new(&args.regex)
            .case_insensitive(args.case_insensitive)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
            .nest_limit(REGEX_NEST_LIMIT)
            .build()
            .map_err(|e| match e {
                regex::Error::CompiledTooBig(limit) => FileError::RegexTooLarge { limit },
                other => FileError::InvalidRegex { message: other.to_string() },
            })?;
        let start = self.resolve(args.path.as_deref().unwrap_or(""), true)?;
        let glob = compile_glob(args.glob.as_deref())?;
        let mut result = SearchResult {
            matches: Vec::new(),
            truncated: false,
            files_searched: 0,
            files_skipped: 0,
            ignore_patterns_skipped: 0,
        };

        // A single file is searched directly.
        let is_file = !start.rel.as_os_str().is_empty()
            && self.dir().symlink_metadata(start.for_dir()).map(|m| m.is_file()).unwrap_or(false);
        if is_file {
            self.search_file(&start.rel, &regex, cap, &mut result);
            return Ok(result);
        }
        result.ignore_patterns_skipped = self.walk(&start, false, glob.as_ref(), &mut |found| {
            if found.is_symlink {
                return true;
            }
            self.search_file(&found.from_root, &regex, cap, &mut result);
            !result.truncated
        })?;
        Ok(result)
    }

    fn search_file(&self, from_root: &Path, regex: &Regex, cap: usize, result: &mut SearchResult) {
        let path = RelPath { shown: display(from_root), rel: from_root.to_path_buf() };
        let Ok((file, meta)) = self.open_regular(&path, "searching") else {
            result.files_skipped += 1;
            return;
        };
        if meta.len() > self.options().max_search_file_bytes {
            result.files_skipped += 1;
            return;
        }
        // The file may have grown since its size was read: never read past the cap.
        let mut reader = BufReader::new(std::io::Read::take(file, self.options().max_search_file_bytes));
        match reader.fill_buf() {
            Ok(head) if binary_kind(head).is_none() => {}
            _ => {
                result.files_skipped += 1;
                return;
            }
        }
        result.files_searched += 1;
        let mut line = Vec::new();
        let mut number = 0;
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            number += 1;
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            if regex.is_match(text) {
                if result.matches.len() == cap {
                    result.truncated = true;
                    return;
                }
                result.matches.push(format!("{}:{number}:{}", path.shown, shorten(text)));
            }
        }
    }

    /// Visit the files under `start` in name order, depth first, calling
    /// `visit` until it returns false; returns the ignore patterns skipped
    /// (see [`MAX_IGNORE_PATTERNS`]).
    fn walk(
        &self,
        start: &RelPath,
        include_hidden: bool,
        pattern: Option<&Override>,
        visit: &mut dyn FnMut(Found) -> bool,
    ) -> Result<usize, FileError> {
        let options = self.options();
        let root = self.dir().open_dir(start.for_dir()).map_err(|e| FileError::from_io("listing", &start.shown, &e))?;
        // Where the walk really is (the start may be a link inside the
        // root), so that the host's reserved paths are known below it.
        let real_start = self.real(&start.rel).unwrap_or_else(|| start.rel.clone());
        let mut stack = vec![Frame { dir: root, rel: PathBuf::new(), depth: 0, rules: None }];
        let mut budget = IgnoreBudget { patterns: MAX_IGNORE_PATTERNS, wildcards: MAX_IGNORE_WILDCARDS, skipped: 0 };
        let mut visited = 0usize;
        while let Some(frame) = stack.pop() {
            let rules = with_ignore_files(&frame, &mut budget);
            let Ok(entries) = frame.dir.entries() else { continue };
            let mut names: Vec<(std::ffi::OsString, cap_std::fs::FileType)> = entries
                .filter_map(Result::ok)
                .filter_map(|entry| entry.file_type().ok().map(|t| (entry.file_name(), t)))
                .collect();
            names.sort_by(|a, b| a.0.cmp(&b.0));
            let mut subdirs = Vec::new();
            for (name, file_type) in names {
                visited += 1;
                if visited > options.max_walk_entries {
                    return Ok(budget.skipped);
                }
                let hidden = name.as_encoded_bytes().first() == Some(&b'.');
                if name == ".git" || (hidden && !include_hidden) {
                    continue;
                }
                let rel = frame.rel.join(&name);
                // The host's own files are listed nowhere and searched never.
                if self.reserved().covers(&real_start.join(&rel)) {
                    continue;
                }
                let is_dir = file_type.is_dir();
                if ignored(rules.as_deref(), &rel, is_dir) {
                    continue;
                }
                if is_dir {
                    if frame.depth + 1 < options.max_walk_depth {
                        subdirs.push((name, rel));
                    }
                    continue;
                }
                if !(file_type.is_file() || file_type.is_symlink()) {
                    continue;
                }
                if pattern.is_some_and(|p| !p.matched(&rel, false).is_whitelist()) {
                    continue;
                }
                if !visit(Found { from_root: start.rel.join(&rel), is_symlink: file_type.is_symlink() }) {
                    return Ok(budget.skipped);
                }
            }
            // Pushed in reverse so the stack pops them in name order.
            for (name, rel) in subdirs.into_iter().rev() {
                // One name, opened from the parent's handle: a directory
                // swapped for a link pointing out is refused here.
                if let Ok(dir) = frame.dir.open_dir(&name) {
                    stack.push(Frame { dir, rel, depth: frame.depth + 1, rules: rules.clone() });
                }
            }
        }
        Ok(budget.skipped)
    }
}

/// How many more ignore patterns a walk applies, and how many it skipped.
struct IgnoreBudget {
    patterns: usize,
    wildcards: usize,
    skipped: usize,
}

/// The frame's rules plus those of its own `.gitignore` and `.ignore`, if any.
fn with_ignore_files(frame: &Frame, budget: &mut IgnoreBudget) -> Option<Arc<Rules>> {
    let mut builder = GitignoreBuilder::new(".");
    let mut found = false;
    for name in [".gitignore", ".ignore"] {
        let Ok(file) = frame.dir.open(name) else { continue };
        let Ok(meta) = file.metadata() else { continue };
        if !meta.is_file() || meta.len() > MAX_IGNORE_FILE {
            continue;
        }
        // Capped again while reading: the file may grow after its size was read.
        for line in BufReader::new(std::io::Read::take(file, MAX_IGNORE_FILE)).lines().map_while(Result::ok) {
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let wildcards = line.bytes().filter(|b| matches!(b, b'*' | b'?' | b'[')).count();
            if budget.patterns == 0 || wildcards > budget.wildcards || line.len() > MAX_IGNORE_PATTERN_BYTES {
                budget.skipped += 1;
                continue;
            }
            budget.patterns -= 1;
            budget.wildcards -= wildcards;
            // A bad line is skipped, as git skips it.
            let _ = builder.add_line(None, &line);
            found = true;
        }
    }
    if !found {
        return frame.rules.clone();
    }
    let Ok(gitignore) = builder.build() else {
        return frame.rules.clone();
    };
    Some(Arc::new(Rules { parent: frame.rules.clone(), dir: frame.rel.clone(), gitignore }))
}

/// Whether the deepest rule that has an opinion on `rel` ignores it.
fn ignored(mut rules: Option<&Rules>, rel: &Path, is_dir: bool) -> bool {
    while let Some(rule) = rules {
        rules = rule.parent.as_deref();
        let Ok(inner) = rel.strip_prefix(&rule.dir) else { continue };
        let matched = rule.gitignore.matched(inner, is_dir);
        if matched.is_ignore() {
            return true;
        }
        if matched.is_whitelist() {
            return false;
        }
    }
    false
}

fn compile_glob(glob: Option<&str>) -> Result<Option<Override>, FileError> {
    let Some(glob) = glob.filter(|g| !g.is_empty()) else { return Ok(None) };
    let invalid = |e: ignore::Error| FileError::InvalidGlob { pattern: glob.to_owned(), message: e.to_string() };
    let mut builder = OverrideBuilder::new(".");
    builder.add(glob).map_err(invalid)?;
    Ok(Some(builder.build().map_err(invalid)?))
}

fn shorten(text: &str) -> String {
    if text.len() <= MAX_MATCH_TEXT {
        return text.to_owned();
    }
    let mut end = MAX_MATCH_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} … [{} more bytes]", &text[..end], text.len() - end)
}
